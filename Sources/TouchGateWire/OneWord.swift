// Text from a client (a service, a tty, a host name) shown where one field must stay one word:
// the audit line, the monitor's summary. Nothing in it can start a line or a terminal sequence.

/// `value` with every byte outside a plain set (letters, digits and `._-:/@,+`) written as `\xHH`.
public func oneWord(_ value: String) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(value.utf8.count)
    for b in value.utf8 {
        let plain =
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
            || b == 0x2E || b == 0x5F || b == 0x2D || b == 0x3A || b == 0x2F || b == 0x40 || b == 0x2C || b == 0x2B
        if plain {
            out.append(b)
        } else {
            out += [0x5C, 0x78, digits[Int(b >> 4)], digits[Int(b & 0x0F)]]
        }
    }
    return String(decoding: out, as: UTF8.self)
}
