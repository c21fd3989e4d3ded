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

    /// Whether prints are sealed to the machine's TPM (docs/SECURITY.md, "Sealed prints").
    public var seal: SealMode
    /// tpm2-tss's TCTI for the TPM (`device:/dev/tpmrm0`, `swtpm:host=127.0.0.1,port=2321`).
    public var tpm: String
    /// The SHA-256 PCRs the data key is bound to; none by default, so a firmware update does not
    /// lock the prints away (docs/SECURITY.md).
    public var sealPCRs: [Int]
    /// The PAM services that may receive a user's sealed login password after a match (docs/spec.md §12).
    public var keyringServices: [String]
    /// Whether the login password may be kept without a TPM (under a root-only key file).
    public var keyringWithoutTPM: Bool

    public static let defaultPrintStore = "/var/lib/fprint"
    public static let defaultTPM = "device:/dev/tpmrm0"
    public static let defaultKeyringServices = ["login", "gdm-fingerprint", "gdm-password", "lightdm", "sddm"]

    public init(
        policy: PolicyConfig = .defaults, passwordService: String = "touchgate", allowRemote: Bool = false,
        printStore: String = DaemonConfig.defaultPrintStore, fprintdAPI: Bool = true, seal: SealMode = .auto,
        tpm: String = DaemonConfig.defaultTPM, sealPCRs: [Int] = [],
        keyringServices: [String] = DaemonConfig.defaultKeyringServices, keyringWithoutTPM: Bool = false
    ) {
        self.policy = policy
        self.passwordService = passwordService
        self.allowRemote = allowRemote
        self.printStore = printStore
        self.fprintdAPI = fprintdAPI
        self.seal = seal
        self.tpm = tpm
        self.sealPCRs = sealPCRs
        self.keyringServices = keyringServices
        self.keyringWithoutTPM = keyringWithoutTPM
    }

    public static let defaults = DaemonConfig()
}

/// `seal` in touchgate.conf: `auto` seals when a TPM answers, `tpm` requires one, `no` never seals.
public enum SealMode: String, Sendable, CaseIterable {
    case auto, tpm, no
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
