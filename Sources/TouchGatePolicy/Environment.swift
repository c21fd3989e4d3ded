// What the daemon observed about the world for one decision: time, boot, prints, reader.

/// Facts read by the daemon at decision time, passed in so the policy stays pure.
public struct Environment: Sendable, Equatable {
    public var now: Instant
    /// `/proc/sys/kernel/random/boot_id` (or whatever the daemon was told to read).
    public var bootID: String
    /// The user's current enrollment snapshot, of the prints on every reader; nil when the user
    /// has no prints.
    public var enrollmentSnapshot: String?
    /// The user has prints on the reader asked for (by default: has any at all).
    public var enrolledHere: Bool
    /// A reader is present and usable (not unplugged, not too hot, not a refused remote session).
    public var readerAvailable: Bool

    public init(
        now: Instant, bootID: String, enrollmentSnapshot: String?, readerAvailable: Bool, enrolledHere: Bool? = nil
    ) {
        self.now = now
        self.bootID = bootID
        self.enrollmentSnapshot = enrollmentSnapshot
        self.enrolledHere = enrolledHere ?? (enrollmentSnapshot != nil)
        self.readerAvailable = readerAvailable
    }
}
