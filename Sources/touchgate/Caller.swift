// Facts about the person running the CLI: user name, uid, terminal, environment.
import TouchGateL10n
import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

enum Caller {
    static let defaultSocket = "/run/touchgate/touchgated.sock"

    /// A non-empty environment variable.
    static func environment(_ name: String) -> String? {
        guard let p = getenv(name) else { return nil }
        let value = String(cString: p)
        return value.isEmpty ? nil : value
    }

    static var isRoot: Bool { getuid() == 0 }

    /// Whether `user` is the account of the real uid (as the daemon judges it, by uid).
    static func isSelf(_ user: String) -> Bool { getpwnam(user).map { $0.pointee.pw_uid == getuid() } ?? false }

    /// Whether this computer knows an account named `user`; a look-up that fails is said, never
    /// taken for an answer either way.
    static func accountExists(_ user: String) throws(Failure) -> Bool {
        errno = 0
        if getpwnam(user) != nil { return true }
        let e = errno
        // getpwnam(3): these too mean "no such name" for some NSS modules.
        if [0, ENOENT, ESRCH, EBADF, EPERM].contains(e) { return false }
        throw Failure(L("cannot look up the user %s: %s", cli, user, systemError(e, cli)))
    }

    /// The name of the real uid (who typed the command, also under a setuid wrapper).
    static func invokingUserName() throws(Failure) -> String {
        let uid = getuid()
        guard let pw = getpwuid(uid), let name = pw.pointee.pw_name else {
            throw Failure(L("cannot find the user name of uid %s; use --user", cli, uid))
        }
        return String(cString: name)
    }

    /// The terminal on standard input, for the daemon's events and audit records.
    static var tty: String? {
        guard isatty(STDIN_FILENO) == 1, let name = ttyname(STDIN_FILENO) else { return nil }
        return String(cString: name)
    }

    /// RHOST on the wire: "ssh" inside an SSH session, as the PAM module sends it, so the daemon's
    /// allow_remote rule judges a verify from there as it judges a login (docs/spec.md §9).
    static var remoteHost: String? {
        environment("SSH_CONNECTION") != nil || environment("SSH_CLIENT") != nil ? "ssh" : nil
    }

    /// A user name that can go on the wire; the daemon decides whether it exists.
    static func validateUserName(_ name: String) throws {
        guard !name.isEmpty else { throw ValidationError(L("--user must not be empty.", cli)) }
        guard !name.utf8.contains(0), name.utf8.count <= 256 else {
            throw ValidationError(L("--user '%s' is not a user name.", cli, name))
        }
    }
}
