// devices, monitor, check-config: the commands about the daemon and its readers.
import TouchGateL10n
import ArgumentParser
import TouchGateConfig
import TouchGateWire
#if canImport(Glibc)
import Glibc
#endif

struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the fingerprint readers, one per line (exit status 1 when there is none).")

    @ParentCommand var root: Touchgate

    func run() throws {
        let result = try DaemonClient(socketPath: root.socketPath).call(.devices, [])
        let devices = result.strings(.device)
        guard !devices.isEmpty else { throw Failure(L("No fingerprint reader found.", cli)) }
        for device in devices { say(device) }
    }
}

struct Monitor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Print authentication events as they happen, until interrupted (exit status 1 if the daemon ends the stream or the output cannot be written).",
        discussion: """
            One line per event: time user service outcome reason. Root sees every user's events \
            unless --user is given; other users see their own.
            """)

    @ParentCommand var root: Touchgate
    @Option(name: .long, help: ArgumentHelp("Only this account's events.", valueName: "user")) var user: String?
    @Flag(name: .long, help: "Print each event's JSON document as it is.") var json = false

    func validate() throws {
        if let user { try Caller.validateUserName(user) }
    }

    func run() throws {
        let fields = user.map { [Field(.user, $0)] } ?? []
        try DaemonClient(socketPath: root.socketPath).stream(.monitor, fields) { frame throws(Failure) in
            guard let document = frame.joined(.json) else { return }
            if json {
                say(oneLine(document))
            } else if let value = JSONValue.parse(document) {
                say(eventSummary(value))
            } else {
                say(oneLine(document))
            }
            // Events that can no longer be written are lost: the monitor ends and says so.
            if let lost = outputFailure() { throw Failure(lost) }
        }
    }
}

struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check a touchgate.conf with the daemon's own validator, without contacting the daemon.",
        discussion: """
            Prints 'FILE: ok', or 'FILE:LINE: reason' on standard error with exit status 1. \
            Without FILE, a missing \(ConfigFile.defaultPath) means the defaults apply, as it \
            does for touchgated; a FILE named that does not exist is an error.
            """)

    @Argument(help: ArgumentHelp("The file to check (default: \(ConfigFile.defaultPath)).", valueName: "file"))
    var named: String?

    func run() throws {
        let file = named ?? ConfigFile.defaultPath
        do {
            _ = try ConfigFile.load(path: file)
        } catch let error as ConfigError {
            let place = error.line > 0 ? "\(file):\(error.line)" : file
            complain("\(place): \(error.message)")
            throw ExitCode.failure
        } catch let error as ConfigReadError {
            complain("\(file): \(error)")
            throw ExitCode.failure
        }
        if access(file, F_OK) != 0 && errno == ENOENT {
            // Only the daemon's own default may be missing (docs/spec.md §6, --config): a file
            // named is one meant to be checked, and a typo in its name is no valid file.
            guard named == nil else {
                complain(L("%s: no such file", cli, file))
                throw ExitCode.failure
            }
            say(L("%s: ok (no such file: the defaults apply)", cli, file))
        } else {
            say(L("%s: ok", cli, file))
        }
    }
}
