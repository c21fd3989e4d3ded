// A client's login session decides "remote" too, by logind's record, not by what the client says
// (docs/spec.md §9): a remote session's sudo started without SSH_CONNECTION sends no RHOST.
import Glibc
import Testing
@testable import TouchGateCore
@testable import TouchGateSocket
import TouchGateTestSupport
import TouchGateWire

@Suite("Socket: remote login sessions")
@CoreActor struct RemoteSessionTests {
    /// A `/proc` and a logind session directory where this process runs in session 7, whose
    /// record is `record`.
    func plantedSessions(_ dir: String, cgroup: String, record: String?) throws -> LoginSessions {
        try plantDirectory("\(dir)/proc/\(getpid())")
        try plantFile("\(dir)/proc/\(getpid())/cgroup", cgroup)
        try plantDirectory("\(dir)/sessions")
        if let record { try plantFile("\(dir)/sessions/7", record) }
        return LoginSessions(proc: "\(dir)/proc", sessions: "\(dir)/sessions")
    }

    let inSession7 = "0::/user.slice/user-1000.slice/session-7.scope\n"

    @Test(arguments: [
        ("REMOTE=1\nREMOTE_HOST=203.0.113.9\n", Outcome.biometryNotAvailable, "remote"),
        ("REMOTE=1\n", .biometryNotAvailable, "remote"),
        ("REMOTE=0\nTTY=/dev/tty1\n", .success, ""),
    ])
    func aPromptIsJudgedByItsClientsLoginSession(_ record: String, _ code: Outcome, _ reason: String)
        async throws
    {
        try await withTemporaryDirectory { dir in
            let sessions = try plantedSessions(dir, cgroup: inSession7, record: record)
            try await withSocketBed(sessions: sessions) { socket in
                try await socket.readyAlice()
                let client = try await socket.connect()
                let reply = try #require(try await client.request(canEvaluateFrame(1)))
                #expect(reply.code == code, "\(record)")
                #expect((reply.string(.reason) ?? "") == reason, "\(record)")
            }
        }
    }

    /// The host the client names still counts: the session is asked only when it names none.
    @Test func aClientThatNamesItsRemoteHostIsRemoteWhateverItsSession() async throws {
        try await withTemporaryDirectory { dir in
            let sessions = try plantedSessions(dir, cgroup: inSession7, record: "REMOTE=0\n")
            try await withSocketBed(sessions: sessions) { socket in
                try await socket.readyAlice()
                let client = try await socket.connect()
                let reply = try #require(try await client.request(canEvaluateFrame(1, rhost: "ssh")))
                #expect(reply.code == .biometryNotAvailable && reply.string(.reason) == "remote")
            }
        }
    }

    @Test(
        arguments: [
            ("0::/user.slice/user-1000.slice/session-7.scope\n", "7"),
            ("0::/user.slice/user-1000.slice/session-c2.scope/app\n", "c2"),
            ("12:pids:/user.slice\n1:name=systemd:/user.slice/user-0.slice/session-3.scope\n0::/\n", "3"),
            ("1:name=systemd:/user.slice/user-0.slice/session-3.scope\n", "3"),
            ("0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope\n", nil),
            ("0::/system.slice/gdm.service\n", nil),
            ("0::/\n", nil),
            ("0::/user.slice/session-..scope\n", nil),
            ("0::/user.slice/session-a b.scope\n", nil),
        ] as [(String, String?)])
    func theSessionIsTheOneItsControlGroupNames(_ cgroup: String, _ id: String?) {
        #expect(LoginSessions.sessionID(inCgroups: cgroup) == id, "\(cgroup)")
    }

    /// No session (a service, the user's own manager), or no logind: nothing to say.
    @Test func aProcessInNoSessionOrWithoutLogindIsNotCalledRemote() async throws {
        try await withTemporaryDirectory { dir in
            var sessions = try plantedSessions(dir, cgroup: "0::/system.slice/gdm.service\n", record: "REMOTE=1\n")
            #expect(sessions.remoteHost(ofProcess: getpid()) == nil)
            sessions = try plantedSessions(dir, cgroup: inSession7, record: nil)
            _ = unlink("\(dir)/sessions/7")
            #expect(sessions.remoteHost(ofProcess: getpid()) == nil)
            #expect(LoginSessions(proc: "\(dir)/none", sessions: "\(dir)/none").remoteHost(ofProcess: getpid()) == nil)
        }
    }
}
