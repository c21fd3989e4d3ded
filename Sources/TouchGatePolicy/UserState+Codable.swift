// The on-disk form of UserState: a version number first, so a future layout is refused, not misread.

extension UserState: Codable {
    /// Bump when a field changes meaning; decoding refuses any other version.
    public static let currentVersion = 1

    enum CodingKeys: String, CodingKey {
        case version, enabled, consecutiveFailedMatches, biometryLockedOut
        case lastPasswordSuccess, lastFingerprintSuccess, bootIDAtPasswordSuccess, enrollmentAtPasswordSuccess
        case adminLocked, consecutiveWrongPasswords, backoffStep, backoffUntil
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let version = try c.decode(Int.self, forKey: .version)
        guard version == Self.currentVersion else {
            // A file from another version is not guessed at: the daemon treats it as corrupt (fail closed).
            throw DecodingError.dataCorruptedError(
                forKey: .version, in: c, debugDescription: "unsupported UserState version \(version)")
        }
        // Every non-optional field is required: a missing counter must not silently become zero (docs/spec.md §9).
        self.init(
            enabled: try c.decode(Bool.self, forKey: .enabled),
            consecutiveFailedMatches: try c.decode(Int.self, forKey: .consecutiveFailedMatches),
            biometryLockedOut: try c.decode(Bool.self, forKey: .biometryLockedOut),
            lastPasswordSuccess: try c.decodeIfPresent(Instant.self, forKey: .lastPasswordSuccess),
            lastFingerprintSuccess: try c.decodeIfPresent(Instant.self, forKey: .lastFingerprintSuccess),
            bootIDAtPasswordSuccess: try c.decodeIfPresent(String.self, forKey: .bootIDAtPasswordSuccess),
            enrollmentAtPasswordSuccess: try c.decodeIfPresent(String.self, forKey: .enrollmentAtPasswordSuccess),
            adminLocked: try c.decode(Bool.self, forKey: .adminLocked),
            consecutiveWrongPasswords: try c.decode(Int.self, forKey: .consecutiveWrongPasswords),
            backoffStep: try c.decode(Int.self, forKey: .backoffStep),
            backoffUntil: try c.decodeIfPresent(Instant.self, forKey: .backoffUntil))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Self.currentVersion, forKey: .version)
        try c.encode(enabled, forKey: .enabled)
        try c.encode(consecutiveFailedMatches, forKey: .consecutiveFailedMatches)
        try c.encode(biometryLockedOut, forKey: .biometryLockedOut)
        try c.encodeIfPresent(lastPasswordSuccess, forKey: .lastPasswordSuccess)
        try c.encodeIfPresent(lastFingerprintSuccess, forKey: .lastFingerprintSuccess)
        try c.encodeIfPresent(bootIDAtPasswordSuccess, forKey: .bootIDAtPasswordSuccess)
        try c.encodeIfPresent(enrollmentAtPasswordSuccess, forKey: .enrollmentAtPasswordSuccess)
        try c.encode(adminLocked, forKey: .adminLocked)
        try c.encode(consecutiveWrongPasswords, forKey: .consecutiveWrongPasswords)
        try c.encode(backoffStep, forKey: .backoffStep)
        try c.encodeIfPresent(backoffUntil, forKey: .backoffUntil)
    }
}
