// keyring enable, disable: the user's login password kept sealed so a fingerprint login unlocks
// the desktop's keyring (docs/spec.md §12).
import ArgumentParser
import TouchGateL10n
import TouchGateWire

struct Keyring: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Let a fingerprint login unlock your keyring, or stop it.",
        discussion: """
            The login password is kept sealed to this computer and released only to the login \
            managers after a fingerprint match; it stops working when the enrolled fingers change, \
            until the next password login.
            """,
        subcommands: [KeyringEnable.self, KeyringDisable.self])
}

struct KeyringEnable: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enable",
        abstract: "Keep your login password sealed so that a fingerprint login unlocks the keyring.",
        discussion: """
            The login password is asked for (or read from standard input) and checked by \
            touchgated. Root naming another user with --user types that user's login password: the \
            prompt names the user, and an account this computer does not know is refused before \
            any password is asked for.
            """)

    @ParentCommand var root: Touchgate
    @OptionGroup var user: UserOption

    func run() throws {
        let user = try user.resolved()
        let client = DaemonClient(socketPath: root.socketPath)
        try client.checkReachable()
        var password: [Field] = []
        if Caller.isSelf(user) {
            password = [Field(.password, try PasswordPrompt.read())]
        } else if Caller.isRoot {
            // The daemon checks the password as the user's (docs/spec.md §12): root is told whose
            // to type, and a name no account has is refused before one is typed (the daemon's
            // sentence), so root's own password never counts as a wrong one of another account.
            guard try Caller.accountExists(user) else { throw Failure(L("No such user: %s", cli, user)) }
            password = [Field(.password, try PasswordPrompt.read(prompt: L("Login password of %s: ", cli, user)))]
        }
        // Anyone else naming another user's keyring is refused by the daemon before any password
        // (docs/spec.md §5), so none is asked for, nor sent.
        _ = try client.call(.keyringEnable, [Field(.user, user)] + password)
        say(L("A fingerprint login now unlocks the keyring of %s.", cli, user))
    }
}

struct KeyringDisable: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disable", abstract: "Forget the sealed login password.")

    @ParentCommand var root: Touchgate
    @OptionGroup var user: UserOption

    func run() throws {
        let user = try user.resolved()
        _ = try DaemonClient(socketPath: root.socketPath).call(
            .keyringDisable, [Field(.user, user)])
        say(L("The sealed login password of %s is forgotten.", cli, user))
    }
}
