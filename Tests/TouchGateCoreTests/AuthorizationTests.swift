// Who may do what (docs/spec.md §5), decided from the caller's uid only: root, the user themself, anyone else.
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: authorization")
@CoreActor struct AuthorizationTests {
    enum Request: String, CaseIterable, Sendable {
        case canEvaluate, evaluate, enroll, delete, enable, disable, list, status, domainState
        case lock, reset, monitor, passwordSuccess, verifyPassword
    }

    enum Who: String, CaseIterable, Sendable {
        case root, theUserThemself, anotherUser, aUIDWithoutAnAccount
        var caller: Caller {
            switch self {
            case .root: return .root
            case .theUserThemself: return .alice
            case .anotherUser: return .bob
            case .aUIDWithoutAnAccount: return .stranger
            }
        }
    }

    enum Right { case yes, withTheirPassword, no }

    /// docs/spec.md §5's table, for requests about alice.
    static func right(_ who: Who, _ request: Request) -> Right {
        switch who {
        case .root: return .yes
        case .anotherUser, .aUIDWithoutAnAccount: return .no
        case .theUserThemself:
            switch request {
            case .enroll, .delete, .enable: return .withTheirPassword
            case .lock, .reset, .passwordSuccess: return .no
            case .canEvaluate, .evaluate, .disable, .list, .status, .domainState, .monitor, .verifyPassword: return .yes
            }
        }
    }

    /// Makes `request` about alice as `caller`, with `password` where the request carries one.
    func perform(_ request: Request, _ core: Core, _ caller: Caller, password: String?) async -> Reply? {
        let origin = Origin(service: "touchgate")
        return await within {
            switch request {
            case .canEvaluate:
                return await core.canEvaluate(user: "alice", policy: .biometrics, rhost: nil, caller: caller)
            case .evaluate:
                return await core.evaluate(
                    core.evaluateRequest(), caller: caller, client: CollectingClient(), input: PromptInput())
            case .enroll:
                return await core.enroll(
                    user: "alice", finger: .leftThumb, password: password, origin: origin, caller: caller,
                    client: CollectingClient(), input: PromptInput())
            case .delete:
                return await core.delete(
                    user: "alice", fingers: [.leftThumb], all: false, password: password, origin: origin, caller: caller
                )
            case .enable: return await core.enable(user: "alice", password: password, origin: origin, caller: caller)
            case .disable: return await core.disable(user: "alice", origin: origin, caller: caller)
            case .list: return await core.list(user: "alice", caller: caller)
            case .status: return await core.status(user: "alice", caller: caller)
            case .domainState: return await core.domainState(user: "alice", service: "sudo", caller: caller)
            case .lock: return await core.lock(user: "alice", origin: origin, caller: caller)
            case .reset: return await core.reset(user: "alice", origin: origin, caller: caller)
            case .monitor:
                let (reply, id) = await core.monitor(user: "alice", caller: caller) { _ in true }
                if let id { core.stopMonitoring(id) }
                return reply
            case .passwordSuccess:
                return await core.passwordSuccessReport(user: "alice", origin: origin, caller: caller)
            case .verifyPassword:
                return await core.verifyPasswordRequest(
                    user: "alice", password: password ?? "", origin: origin, caller: caller)
            }
        }
    }

    @Test(arguments: Who.allCases)
    func everyRequestIsDecidedFromTheCallersUIDAsTheTableSays(_ who: Who) async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let notPermitted = Refusal(.notPermitted, reason: nil, text: .notPermitted)
            for request in Request.allCases {
                let checksBefore = bed.passwords.calls
                let withPassword = try #require(
                    await perform(request, core, who.caller, password: bed.passwords.correctPassword))
                switch Self.right(who, request) {
                case .yes:
                    #expect(withPassword.outcome != .notPermitted, "\(request): \(withPassword)")
                case .withTheirPassword:
                    #expect(withPassword.outcome != .notPermitted, "\(request): \(withPassword)")
                    let without = try #require(await perform(request, core, who.caller, password: nil))
                    #expect(
                        without == Refusal(.notPermitted, reason: .passwordNeeded, text: .passwordNeeded), "\(request)"
                    )
                case .no:
                    #expect(withPassword == notPermitted, "\(request): \(withPassword)")
                    // Refused before any password is looked at: no oracle for another's password.
                    #expect(bed.passwords.calls == checksBefore, "\(request)")
                }
            }
        }
    }

    /// The table a front-end without an authority of its own asks (D-Bus without polkit) is the one
    /// the requests are decided by: the same answer for a right as for its requests.
    @Test(arguments: Who.allCases)
    func theTableAloneAnswersAsTheRequestsAre(_ who: Who) async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let stands: [(TouchGateCore.Right, Request)] = [
                (.selfOrRoot, .list), (.selfWithPasswordOrRoot, .enroll), (.rootOnly, .lock),
            ]
            for (right, request) in stands {
                let answer = await core.permission(who.caller, "alice", right)
                let withPassword = await core.permission(who.caller, "alice", right, withPassword: true)
                switch Self.right(who, request) {
                case .yes:
                    #expect(answer == nil && withPassword == nil, "\(right)")
                case .withTheirPassword:
                    #expect(answer == Refusal(.notPermitted, reason: .passwordNeeded, text: .passwordNeeded))
                    #expect(withPassword == nil, "\(right)")
                case .no:
                    #expect(answer?.outcome == .notPermitted && answer?.reason == nil, "\(right)")
                    #expect(withPassword == answer, "\(right)")
                }
            }
            #expect(bed.passwords.calls == 0)  // the table never checks a password
        }
    }

    @Test func whatPolkitGrantsWidensTheTableAsItSays() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let changer = Caller(uid: Caller.alice.uid, pid: 1, grants: [.changePrints])
            #expect(await core.permission(changer, "alice", .selfWithPasswordOrRoot) == nil)
            let helper = Caller(uid: Caller.bob.uid, pid: 1, grants: [.actForOthers])
            #expect(await core.permission(helper, "alice", .selfOrRoot) == nil)
            #expect(await core.permission(helper, "alice", .rootOnly)?.outcome == .notPermitted)
        }
    }

    @Test func anUnknownUserIsUnknownToRootAndNotPermittedToAnyoneElse() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            // Whether an account exists is not told to someone who may not ask about it.
            #expect(
                await core.status(user: "mallory", caller: .root)
                    == Refusal(.userUnknown, reason: nil, text: .userUnknown("mallory")))
            #expect(
                await core.status(user: "mallory", caller: .bob)
                    == Refusal(.notPermitted, reason: nil, text: .notPermitted))
            #expect(
                await core.canEvaluate(user: "mallory", policy: .biometrics, rhost: nil, caller: .stranger).outcome
                    == .notPermitted)
        }
    }

    @Test func aFullQueueOfAccountLookUpsIsBusyAndNotAnUnknownAccount() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let release = try #require(await fill(core.accountPool, queueLimit: 256))
            let busy = Refusal(.busy, reason: .busy, text: .busy)
            #expect(await core.status(user: "alice", caller: .root) == busy)
            #expect(await core.status(user: "alice", caller: .alice) == busy)
            await release()
            #expect(await core.status(user: "alice", caller: .alice).outcome == .success)
        }
    }

    /// A refusal a client can cause at will is logged within the limit of docs/SECURITY.md §1,
    /// whether it is for another user's account or for a root-only action on the caller's own.
    @Test func refusalsACallerRepeatsAtWillAreLoggedWithinTheLimit() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            for _ in 0..<20 {
                #expect(await core.lock(user: "alice", origin: Origin(), caller: .alice).outcome == .notPermitted)
                #expect(await core.lock(user: "bob", origin: Origin(), caller: .alice).outcome == .notPermitted)
            }
            #expect(bed.logged.all.filter { $0.hasPrefix("refused") }.count == 5, "\(bed.logged.all)")
        }
    }

    @Test(arguments: ["../alice", "alice/../bob", ".", "..", "", "-rf", "a\0b", String(repeating: "a", count: 65)])
    func aNameThatCouldEscapeTheStoresIsRefusedForEveryone(_ name: String) async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            for caller in [Caller.root, .alice] {
                #expect(
                    await core.status(user: name, caller: caller)
                        == Refusal(.userUnknown, reason: nil, text: .userUnknown(name)))
                #expect(await core.lock(user: name, origin: Origin(), caller: caller).outcome == .userUnknown)
            }
            #expect(directoryEntries("\(bed.statePath)/users") == [])
        }
    }
}
