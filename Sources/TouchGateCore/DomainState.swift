// Domain state (docs/spec.md §4): HMAC-SHA256 keyed by a per-installation secret over the service and the
// sorted set of print digests, so order and history do not matter and services do not correlate.
import Crypto

struct DomainStateKey: Sendable {
    let key: [UInt8]

    /// Reads `<state>/secret`, creating 32 random bytes (0600, atomic) the first time.
    init(stateDirectory: Directory) throws(StorageError) {
        if let existing = try stateDirectory.read("secret", limit: 4096) {
            guard existing.count >= 32 else { throw .unsafe("\(stateDirectory.path)/secret is shorter than 32 bytes") }
            key = existing
            return
        }
        let fresh = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        try stateDirectory.writeAtomically("secret", fresh)
        key = fresh
    }

    /// Hex HMAC, or nil when there are no prints.
    func domainState(service: String, prints: [EnrolledPrint]) -> String? {
        domainState(service: service, identities: prints.map(\.identity))
    }

    /// Of the prints' identities (`EnrolledPrint.identity`, "finger:digest"), on any readers.
    func domainState(service: String, identities: [String]) -> String? {
        guard !identities.isEmpty else { return nil }
        let digests = identities.sorted().joined(separator: "\n")
        var message = Array("touchgate-domain-state-v1\0\(service)\0".utf8)
        message.append(contentsOf: Array(digests.utf8))
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))
        return hex(Array(mac))
    }
}
