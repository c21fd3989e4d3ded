// The daemon's configuration as one immutable value, and the error that names the bad line.
import TouchGatePolicy

/// Everything `touchgate.conf` can set (docs/spec.md §6). Built only by `ConfigFile.parse`, already validated.
public struct DaemonConfig: Sendable, Equatable {
    /// The numbers of the LocalAuthentication rules (docs/spec.md §3).
    public var policy: PolicyConfig
    /// The PAM service the daemon uses to verify a password itself.
    public var passwordService: String
    /// Whether remote sessions (PAM_RHOST, SSH) may get a fingerprint prompt.
    public var allowRemote: Bool
    /// Where enrolled prints are kept, in fprintd's layout (fprintd's own directory by default,
    /// so its users keep their fingers).
    public var printStore: String

    /// Whether fprintd's D-Bus API (net.reactivated.Fprint) is served on the system bus.
    public var fprintdAPI: Bool

    public static let defaultPrintStore = "/var/lib/fprint"

    public init(
        policy: PolicyConfig = .defaults, passwordService: String = "touchgate", allowRemote: Bool = false,
        printStore: String = DaemonConfig.defaultPrintStore, fprintdAPI: Bool = true
    ) {
        self.policy = policy
        self.passwordService = passwordService
        self.allowRemote = allowRemote
        self.printStore = printStore
        self.fprintdAPI = fprintdAPI
    }

    public static let defaults = DaemonConfig()
}

/// A config file the daemon must refuse: where (1-based line; 0 = the file as a whole) and why.
public struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    public let line: Int
    public let message: String

    public init(line: Int, message: String) {
        self.line = line
        self.message = message
    }

    /// `line 7: unknown key 'max_try'`
    public var description: String { line > 0 ? "line \(line): \(message)" : message }
}

/// The config file exists but cannot be read (permissions, a directory, I/O error, too large).
public struct ConfigReadError: Error, Equatable, Sendable, CustomStringConvertible {
    public let path: String
    public let reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    /// `cannot read: Permission denied`; like `ConfigError`, the caller puts the path in front.
    public var description: String { "cannot read: \(reason)" }
}
