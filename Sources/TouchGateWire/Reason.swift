// The machine reasons (REASON) that say which case of an outcome code applies (docs/spec.md §2).
import CTouchGateWire

/// A reason as it travels on the wire and in events; the raw value is the wire string.
public enum Reason: String, Sendable, CaseIterable, Codable {
    // authenticationFailed
    case maxTries, wrongPassword
    // systemCancel, appCancel
    case suspend, shutdown, cancelled, clientGone
    // biometryNotAvailable
    case noReader, removed, tooHot, busy, readerError, remote, printsUnsafe, printsSealed
    case readerProtocol = "protocol"
    // biometryNotEnrolled
    case noPrints, notEnabled
    // biometryLockout
    case lockout, stateUnreadable
    // passwordRequired (docs/spec.md §3)
    case boot, idle, interval, enrollmentChanged, adminLock
    // passwordBackoff, passwordNotSet, notPermitted
    case backoff, passwordNotSet, passwordNeeded
    // internal
    case storage, passwordService, storageFull
    // timeout, templateDamaged, duplicate
    case timeout, templateDamaged, duplicate
    // success: how it was reached (events and replies), or what of it did not happen
    case password, pamStack, passwordSuccess, notDeletedFromReader
}

// The header is the source of truth; a test fails when the two drift.
public let headerReasons: [Reason: String] = [
    .maxTries: TG_REASON_MAX_TRIES, .wrongPassword: TG_REASON_WRONG_PASSWORD,
    .suspend: TG_REASON_SUSPEND, .shutdown: TG_REASON_SHUTDOWN, .cancelled: TG_REASON_CANCELLED,
    .clientGone: TG_REASON_CLIENT_GONE, .noReader: TG_REASON_NO_READER, .removed: TG_REASON_REMOVED,
    .tooHot: TG_REASON_TOO_HOT, .busy: TG_REASON_BUSY, .readerError: TG_REASON_READER_ERROR,
    .remote: TG_REASON_REMOTE, .printsUnsafe: TG_REASON_PRINTS_UNSAFE, .printsSealed: TG_REASON_PRINTS_SEALED,
    .readerProtocol: TG_REASON_PROTOCOL, .noPrints: TG_REASON_NO_PRINTS,
    .notEnabled: TG_REASON_NOT_ENABLED, .lockout: TG_REASON_LOCKOUT,
    .stateUnreadable: TG_REASON_STATE_UNREADABLE, .boot: TG_REASON_BOOT, .idle: TG_REASON_IDLE,
    .interval: TG_REASON_INTERVAL, .enrollmentChanged: TG_REASON_ENROLLMENT_CHANGED,
    .adminLock: TG_REASON_ADMIN_LOCK, .backoff: TG_REASON_BACKOFF,
    .passwordNotSet: TG_REASON_PASSWORD_NOT_SET, .passwordNeeded: TG_REASON_PASSWORD_NEEDED,
    .storage: TG_REASON_STORAGE, .passwordService: TG_REASON_PASSWORD_SERVICE,
    .storageFull: TG_REASON_STORAGE_FULL, .timeout: TG_REASON_TIMEOUT,
    .templateDamaged: TG_REASON_TEMPLATE_DAMAGED, .duplicate: TG_REASON_DUPLICATE,
    .password: TG_REASON_PASSWORD, .pamStack: TG_REASON_PAM_STACK,
    .passwordSuccess: TG_REASON_PASSWORD_SUCCESS, .notDeletedFromReader: TG_REASON_NOT_DELETED_FROM_READER,
]
