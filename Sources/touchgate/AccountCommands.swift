// enable, disable, status, lock, reset, domain-state: a user's fingerprint state.
import TouchGateL10n
import ArgumentParser
import TouchGateWire

struct Enable: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Offer fingerprint authentication to the user again.",
        discussion: "A user other than root is asked for their password first.")

    @ParentCommand var root: Touchgate
    @OptionGroup var user: UserOption

    func run() throws {
        let user = try user.resolved()
        let client = DaemonClient(socketPath: root.socketPath)
        if !Caller.isRoot { try client.checkReachable() }
        _ = try client.call(.enable, [Field(.user, user)] + (try PasswordPrompt.fieldIfNeeded(for: user)))
        say(L("Fingerprint authentication enabled for %s.", cli, user))
    }
}

struct Disable: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stop offering fingerprint authentication; the prints are kept.")

    @ParentCommand var root: Touchgate
    @OptionGroup var user: UserOption

    func run() throws {
        let user = try user.resolved()
        _ = try DaemonClient(socketPath: root.socketPath).call(.disable, [Field(.user, user)])
        say(L("Fingerprint authentication disabled for %s.", cli, user))
    }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show enabled state, fingers, counters, lockout and password requirements.")

    @ParentCommand var root: Touchgate
    @OptionGroup var user: UserOption
    @OptionGroup var reader: ReaderOption
    @Flag(name: .long, help: "Print the daemon's JSON document on one line.") var json = false

    func run() throws {
        let user = try user.resolved()
        let result = try DaemonClient(socketPath: root.socketPath).call(.status, [Field(.user, user)] + reader.fields)
        guard let document = result.joined(.json) else {
            throw Failure(L("touchgated sent no status", cli))
        }
        if json {
            say(oneLine(document))
        } else {
            guard let value = JSONValue.parse(document) else {
                throw Failure(L("touchgated sent a status that is not JSON", cli))
            }
            for line in keyValueLines(value) { say(line) }
        }
    }
}

struct Lock: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Refuse the user's fingerprints until a password success (root only).")

    @ParentCommand var root: Touchgate
    @Option(name: .long, help: ArgumentHelp("The account to lock.", valueName: "user")) var user: String

    func validate() throws { try Caller.validateUserName(user) }

    func run() throws {
        _ = try DaemonClient(socketPath: root.socketPath).call(.lock, [Field(.user, user)])
        say(L("Locked fingerprint authentication for %s until a password success.", cli, user))
    }
}

struct Reset: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Clear the user's failure counters and lockout (root only).")

    @ParentCommand var root: Touchgate
    @Option(name: .long, help: ArgumentHelp("The account to reset.", valueName: "user")) var user: String

    func validate() throws { try Caller.validateUserName(user) }

    func run() throws {
        _ = try DaemonClient(socketPath: root.socketPath).call(.reset, [Field(.user, user)])
        say(L("Reset the counters of %s.", cli, user))
    }
}

struct DomainState: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "domain-state",
        abstract: "Print the value that changes when the set of enrolled prints changes (hex, or none).")

    @ParentCommand var root: Touchgate
    @OptionGroup var user: UserOption
    @Option(name: .long, help: ArgumentHelp("The PAM service the value is for.", valueName: "service"))
    var service: String?

    func validate() throws {
        if let service, service.isEmpty || service.utf8.contains(0) || service.utf8.count > WireLimits.maxString {
            throw ValidationError(L("--service must be a PAM service name.", cli))
        }
    }

    func run() throws {
        let user = try user.resolved()
        let fields = [Field(.user, user)] + (service.map { [Field(.service, $0)] } ?? [])
        let result = try DaemonClient(socketPath: root.socketPath).call(.domainState, fields)
        say(result.string(.domainState).flatMap { $0.isEmpty ? nil : $0 } ?? "none")
    }
}
