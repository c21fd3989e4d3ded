// Text from the files doctor reads, made safe to print.

extension DoctorChecks {
    /// Text from the files under review, safe to print: control characters (a carriage return of
    /// a CRLF file, a terminal escape) written as escapes.
    static func shown(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x09: out += "\\t"
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0..<0x20, 0x7F..<0xA0:
                let hex = String(scalar.value, radix: 16)
                out += "\\x" + (hex.count < 2 ? "0" + hex : hex)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
