// The `touchgate` command: its subcommands, the global --socket option, and one-line failures.
import ArgumentParser
import TouchGateL10n
import TouchGateWire
#if canImport(Glibc)
import Glibc
#endif

@main
struct Touchgate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "touchgate",
        abstract: "Manage fingerprint authentication (touchgated).",
        discussion: """
            Talks to touchgated over its socket; never touches the reader itself. \
            Exit status 0 on success; otherwise one line on standard error.
            """,
        subcommands: [
            Enroll.self, Verify.self, List.self, Delete.self, Enable.self, Disable.self,
            Status.self, Lock.self, Reset.self, DomainState.self, Monitor.self, Devices.self,
            CheckConfig.self, Doctor.self, Keyring.self, Prints.self,
        ])

    @Option(
        name: .long,
        help: ArgumentHelp(
            "touchgated's socket (default: $TOUCHGATE_SOCKET, else \(Caller.defaultSocket)).",
            valueName: "path"))
    var socket: String?

    func validate() throws {
        if socket?.isEmpty == true { throw ValidationError(L("--socket needs a path", cli)) }
    }

    /// The socket to use: --socket, else $TOUCHGATE_SOCKET, else the packaged default.
    var socketPath: String { socket ?? Caller.environment("TOUCHGATE_SOCKET") ?? Caller.defaultSocket }

    /// Like `ParsableCommand.main()`, but a `Failure` becomes exactly one `touchgate: …` line.
    static func main() {
        // A reader that goes away (`monitor | head -1`) is an output error said as such (exit
        // status 1), not a death by SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot()
            if !type(of: command).configuration.subcommands.isEmpty { missingSubcommand(type(of: command)) }
            try command.run()
            if let lost = outputFailure() { throw Failure(lost) }
        } catch let failure as Failure {
            // One line, even when the daemon's message has several (a refusal, then a damaged print).
            complain("touchgate: \(failure.reason.split(separator: "\n").joined(separator: "; "))")
            Glibc.exit(failure.status)
        } catch {
            exit(withError: error)
        }
    }

    /// A group (`touchgate`, `touchgate keyring`, `touchgate prints`) given without its
    /// subcommand does nothing: a usage error, never help and exit status 0, which a script's
    /// `touchgate --socket="$S" disable` with $S empty (`disable` then taken as the socket) would
    /// read as success. The help goes to standard error, below the error.
    static func missingSubcommand(_ group: any ParsableCommand.Type) -> Never {
        complain("Error: " + L("Missing a subcommand: give one of those listed below.", cli) + "\n")
        complain(helpMessage(for: group))
        Glibc.exit(ExitCode.validationFailure.rawValue)
    }
}

/// Why a command failed, for a person: printed as `touchgate: <reason>` with exit status `status`.
struct Failure: Error {
    let reason: String
    var status: Int32 = 1
    init(_ reason: String, status: Int32 = 1) {
        self.reason = reason
        self.status = status
    }
}

/// `--user U`, defaulting to the user who runs the command.
struct UserOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The account (default: you).", valueName: "user"))
    var user: String?

    func validate() throws {
        if let user { try Caller.validateUserName(user) }
    }

    /// The named user, or the invoking user's name.
    func resolved() throws(Failure) -> String {
        if let user { return user }
        return try Caller.invokingUserName()
    }
}

/// --device: the reader a command is for, when the machine has several (`touchgate devices` lists
/// them); without it the default one, the first libfprint lists.
struct ReaderOption: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The reader: its driver (as `touchgate devices` shows it in brackets), its name, or DRIVER/DEVICE-ID.",
            valueName: "reader"))
    var device: String?

    func validate() throws {
        guard let device else { return }
        let control = device.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
        if device.isEmpty || device.utf8.count > 255 || control {
            throw ValidationError(L("A reader's name is 1 to 255 bytes long, with no control characters.", cli))
        }
    }

    /// The DEVICE field the request carries (none: the default reader).
    var fields: [Field] { device.map { [Field(.device, $0)] } ?? [] }

}
