// enroll, verify, list, delete: the commands about a user's prints.
import TouchGateL10n
import ArgumentParser
import TouchGateWire

/// Checks a finger name, listing the valid ones when it is not one of them.
func validateFinger(_ name: String) throws {
    guard Finger(rawValue: name) != nil else {
        let valid = Finger.allCases.map(\.rawValue).joined(separator: ", ")
        throw ValidationError(L("Unknown finger '%s'. Valid names: %s.", cli, name, valid))
    }
}

let fingerHelp = ArgumentHelp(
    "The finger, as fprintd names it: \(Finger.allCases.map(\.rawValue).joined(separator: ", ")).",
    valueName: "finger")

struct Enroll: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Enroll a finger (and enable fingerprint authentication).",
        discussion: "A user other than root is asked for their password first.")

    @ParentCommand var root: Touchgate
    @OptionGroup var user: UserOption
    @OptionGroup var reader: ReaderOption
    @Option(name: .long, help: fingerHelp) var finger: String = Finger.rightIndex.rawValue

    func validate() throws { try validateFinger(finger) }

    func run() throws {
        let user = try user.resolved()
        let client = DaemonClient(socketPath: root.socketPath)
        if !Caller.isRoot { try client.checkReachable() }
        let fields =
            [Field(.user, user), Field(.finger, finger)] + reader.fields + localeField()
            + (try PasswordPrompt.fieldIfNeeded(for: user))
        _ = try client.prompt(.enroll, fields) { frame in
            if let line = progressLine(frame, enrolling: finger) { say(line) }
        }
        say(L("Enrolled %s for %s.", cli, finger, user))
    }
}

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a fingerprint against the enrolled ones, as a login would.",
        discussion: "Counts towards the lockout like any prompt; exit status 0 only on a match.")

    @ParentCommand var root: Touchgate
    @OptionGroup var user: UserOption
    @OptionGroup var reader: ReaderOption

    func run() throws {
        let user = try user.resolved()
        var fields =
            [
                Field(.user, user), Field(.policy, EvaluationPolicy.biometrics.rawValue), Field(.service, "touchgate"),
            ] + reader.fields + localeField()
        if let tty = Caller.tty { fields.append(Field(.tty, tty)) }
        if let rhost = Caller.remoteHost { fields.append(Field(.rhost, rhost)) }
        _ = try DaemonClient(socketPath: root.socketPath).prompt(.evaluate, fields) { frame in
            if let line = progressLine(frame) { say(line) }
        }
        say(L("Fingerprint recognised.", cli))
    }
}

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the enrolled fingers, one per line.",
        discussion: "With none, one sentence says so instead (exit status 0); a script tests for a finger's name.")

    @ParentCommand var root: Touchgate
    @OptionGroup var user: UserOption
    @OptionGroup var reader: ReaderOption

    func run() throws {
        let user = try user.resolved()
        let result = try DaemonClient(socketPath: root.socketPath).call(.list, [Field(.user, user)] + reader.fields)
        let fingers = result.strings(.finger)
        if fingers.isEmpty {
            say(L("No fingers enrolled for %s.", cli, user))
        }
        for finger in fingers { say(finger) }
    }
}

struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete one enrolled finger, or all of them.",
        discussion: """
            A user other than root is asked for their password first. Without --device, the \
            prints made on every reader are deleted.
            """)

    @ParentCommand var root: Touchgate
    @OptionGroup var user: UserOption
    @OptionGroup var reader: ReaderOption
    @Option(name: .long, help: fingerHelp) var finger: String?
    @Flag(name: .long, help: "Delete every enrolled finger.") var all = false

    func validate() throws {
        switch (finger, all) {
        case (nil, false): throw ValidationError(L("Give either --finger or --all.", cli))
        case (.some, true): throw ValidationError(L("Give --finger or --all, not both.", cli))
        case (let name?, false): try validateFinger(name)
        case (nil, true): break
        }
    }

    func run() throws {
        let user = try user.resolved()
        let client = DaemonClient(socketPath: root.socketPath)
        if !Caller.isRoot { try client.checkReachable() }
        let which = finger.map { Field(.finger, $0) } ?? Field(.all, 1)
        let fields = [Field(.user, user), which] + reader.fields + (try PasswordPrompt.fieldIfNeeded(for: user))
        let result = try client.call(.delete, fields)
        if let finger {
            say(L("Deleted %s for %s.", cli, finger, user))
        } else if result.strings(.finger).isEmpty {
            say(L("No fingers enrolled for %s.", cli, user))
        } else {
            say(L("Deleted all fingers for %s.", cli, user))
        }
        // The daemon's first line says what was deleted, as the lines above do; any line after it
        // is a note (a match-on-chip reader kept its own copy), shown without reading its reason.
        for line in result.string(.message)?.split(separator: "\n").dropFirst() ?? [] {
            complain("touchgate: \(line)")
        }
    }
}
