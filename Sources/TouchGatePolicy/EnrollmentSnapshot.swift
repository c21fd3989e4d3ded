// A plain, order-independent description of a set of prints, for the enrollmentChanged rule.

/// One string for a set of prints: the same for the same set in any order or with duplicates,
/// different for different sets, nil for none. Pass one identifier per print that changes when the
/// print is replaced (e.g. "right-index-finger:<template id>"), not the finger name alone.
/// Not a secret and not the domain state of docs/spec.md §4 (that one is an HMAC in the daemon): it is only
/// compared with the snapshot stored at the last password success, in a root-only state file.
public func enrollmentSnapshot(fingers: some Collection<String>) -> String? {
    // Bytes, not Characters: two identifiers equal under Unicode equivalence but not byte-equal
    // are different prints, and byte order is the same on every machine and Swift version.
    let prints = Set(fingers.map { Array($0.utf8) }).sorted { $0.lexicographicallyPrecedes($1) }
    guard !prints.isEmpty else { return nil }
    // Length-prefixed, so no identifier can contain a separator that merges two sets into one string.
    var encoded: [UInt8] = []
    for print in prints {
        encoded += Array(String(print.count).utf8) + [UInt8(ascii: ":")] + print
    }
    return String(decoding: encoded, as: UTF8.self)
}
