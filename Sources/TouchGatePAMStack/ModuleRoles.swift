// What a module line is to touchgate, and what it returns in each imagined authentication.

/// The part a module line plays in an auth stack.
public enum ModuleRole: Equatable, Sendable {
    /// pam_touchgate.so asking for a finger; `eitherOr` when policy=biometrics-or-password.
    case fingerprint(eitherOr: Bool)
    /// pam_touchgate.so report: tells the daemon about a password success; always PAM_IGNORE.
    case report
    /// A module that checks the typed password (pam_unix, pam_sss, …).
    case password
    case faillock(FaillockMode)
    /// Another fingerprint module (pam_fprintd): no finger in these runs.
    case otherFingerprint
    case permit, deny
    /// A check that passes or fails for the person at the prompt (pam_succeed_if, pam_nologin,
    /// pam_wheel, …): played both ways.
    case condition
    /// A module that prepares rather than decides (pam_env, pam_faildelay, pam_gnome_keyring, …): succeeds.
    case setup
    /// Succeeds only for root (pam_rootok); the person at the prompt is not root.
    case rootOnly
    /// Anything else: taken as PAM_IGNORE, so it decides nothing.
    case unknown

    public enum FaillockMode: Equatable, Sendable { case preauth, authfail, authsucc, other }

    public init(_ entry: StackEntry) {
        let name = entry.moduleName
        switch name {
        case "pam_touchgate":
            if entry.arguments.contains("report") {
                self = .report
            } else {
                self = .fingerprint(eitherOr: entry.arguments.contains("policy=biometrics-or-password"))
            }
        case "pam_faillock":
            if entry.arguments.contains("preauth") {
                self = .faillock(.preauth)
            } else if entry.arguments.contains("authfail") {
                self = .faillock(.authfail)
            } else if entry.arguments.contains("authsucc") {
                self = .faillock(.authsucc)
            } else {
                self = .faillock(.other)
            }
        case "pam_permit": self = .permit
        case "pam_deny": self = .deny
        case "pam_rootok": self = .rootOnly
        default:
            if Self.passwordModules.contains(name) {
                self = .password
            } else if Self.fingerprintModules.contains(name) {
                self = .otherFingerprint
            } else if Self.conditionModules.contains(name) {
                self = .condition
            } else if Self.setupModules.contains(name) {
                self = .setup
            } else {
                self = .unknown
            }
        }
    }

    public var isFingerprint: Bool { if case .fingerprint = self { return true } else { return false } }

    /// Modules that decide whether a typed password is right.
    public static let passwordModules: Set<String> = [
        "pam_unix", "pam_unix2", "pam_sss", "pam_krb5", "pam_ldap", "pam_winbind", "pam_systemd_home",
        "pam_pwdfile", "pam_userdb", "pam_matrix", "pam_radius_auth", "pam_tacplus",
    ]

    /// Password modules that reach their servers over TCP or UDP themselves (pam_sss and
    /// pam_winbind go through a local daemon's Unix socket): the daemon's unit allows no IP.
    public static let networkModules: Set<String> = ["pam_krb5", "pam_ldap", "pam_radius_auth", "pam_tacplus"]

    static let fingerprintModules: Set<String> = ["pam_fprintd", "pam_fprint", "pam_howdy"]

    static let conditionModules: Set<String> = [
        "pam_succeed_if", "pam_nologin", "pam_securetty", "pam_wheel", "pam_shells", "pam_access", "pam_time",
        "pam_listfile", "pam_localuser", "pam_usertype",
    ]

    static let setupModules: Set<String> = [
        "pam_faildelay", "pam_group", "pam_env", "pam_echo", "pam_cap", "pam_keyinit", "pam_loginuid",
        "pam_gnome_keyring", "pam_kwallet", "pam_kwallet5",
    ]
}

/// One imagined authentication: what the reader, the typed password and the conditions do.
public struct Scenario: Equatable, Sendable {
    /// What pam_touchgate's fingerprint lines return; nil: they do nothing, as if not there.
    public var fingerprint: PAMResult?
    /// The origin of the password module that accepts the password; nil: every password is wrong.
    public var acceptedBy: String?
    /// The origins of the condition lines that fail (the others pass).
    public var failing: Set<String>

    public init(fingerprint: PAMResult?, acceptedBy: String? = nil, failing: Set<String> = []) {
        self.fingerprint = fingerprint
        self.acceptedBy = acceptedBy
        self.failing = failing
    }

    /// A module's result in this scenario (nil: the line does nothing). A `missing` module's
    /// line fails with PAM_MODULE_UNKNOWN, as Linux-PAM fails it (quiet `-type` lines too).
    public func result(of entry: StackEntry, missing: (StackEntry) -> Bool = { _ in false }) -> PAMResult? {
        if missing(entry) { return .moduleUnknown }
        switch ModuleRole(entry) {
        case .fingerprint: return fingerprint
        case .report: return .ignore
        case .password: return entry.origin == acceptedBy ? .success : .authErr
        case .faillock(.authfail): return .authErr
        case .faillock: return .success
        case .otherFingerprint: return .authinfoUnavail
        case .condition: return failing.contains(entry.origin) ? .authErr : .success
        case .permit, .setup: return .success
        case .deny: return .authErr
        case .rootOnly: return .authErr
        case .unknown: return .ignore
        }
    }

    /// Every way the conditions of `entries` can turn out, at most 2^8 (further ones pass).
    public static func conditionOutcomes(_ entries: [StackEntry]) -> [Set<String>] {
        var origins: [String] = []
        for entry in entries where ModuleRole(entry) == .condition && !origins.contains(entry.origin) {
            origins.append(entry.origin)
        }
        origins = Array(origins.prefix(8))
        return (0..<(1 << origins.count)).map { bits in
            Set(origins.indices.filter { bits & (1 << $0) != 0 }.map { origins[$0] })
        }
    }
}
