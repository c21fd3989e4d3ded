// Typed values of touchgate.conf: counts, durations, booleans, duration lists, PAM service names.

/// Why one value cannot be used; the parser puts the key in front and the line number around it.
struct ValueProblem: Error, Equatable {
    let reason: String
}

enum ConfigValues {
    static let minute: Int64 = 60
    static let hour: Int64 = 3600
    static let day: Int64 = 86_400

    /// A whole number in `range`, written as plain decimal digits.
    static func count(_ text: String, in range: ClosedRange<Int>) throws(ValueProblem) -> Int {
        guard let digits = decimalDigits(text) else {
            throw ValueProblem(
                reason: "must be a whole number between \(range.lowerBound) and \(range.upperBound), got '\(text)'")
        }
        guard let n = decimalValue(digits), n <= Int64(range.upperBound), n >= Int64(range.lowerBound) else {
            throw ValueProblem(reason: "must be between \(range.lowerBound) and \(range.upperBound), got \(text)")
        }
        return Int(n)
    }

    /// Seconds, written as plain seconds or a number with `s`, `m`, `h` or `d` (`90m`, `48h`).
    static func duration(_ text: String, in range: ClosedRange<Int64>) throws(ValueProblem) -> Int64 {
        var number = Substring(text)
        var unit: Int64 = 1
        if let last = number.last, let u = unitSeconds(last) {
            unit = u
            number = number.dropLast()
        }
        guard let digits = decimalDigits(number) else {
            throw ValueProblem(reason: "must be a duration such as 30, 45s, 90m, 48h or 7d, got '\(text)'")
        }
        let (seconds, overflow) = (decimalValue(digits) ?? Int64.max).multipliedReportingOverflow(by: unit)
        guard !overflow, range.contains(seconds) else {
            throw ValueProblem(
                reason: "must be between \(describe(range.lowerBound)) and \(describe(range.upperBound)), got \(text)")
        }
        return seconds
    }

    /// `yes`/`no`/`true`/`false`, lower case as the documentation writes them.
    static func boolean(_ text: String) throws(ValueProblem) -> Bool {
        switch text {
        case "yes", "true": return true
        case "no", "false": return false
        default: throw ValueProblem(reason: "must be yes, no, true or false, got '\(text)'")
        }
    }

    /// Comma-separated durations (`1m,5m,15m,1h`), `steps` of them, each in `range`.
    static func durations(_ text: String, steps: ClosedRange<Int>, each range: ClosedRange<Int64>) throws(ValueProblem)
        -> [Int64]
    {
        let items = text.split(separator: ",", omittingEmptySubsequences: false).map { trimmed($0) }
        if items.contains(where: \.isEmpty) {
            throw ValueProblem(reason: "has an empty step in '\(text)' (write steps like 1m,5m,15m,1h)")
        }
        guard steps.contains(items.count) else {
            throw ValueProblem(
                reason: "must have between \(steps.lowerBound) and \(steps.upperBound) steps, got \(items.count)")
        }
        var result: [Int64] = []
        for (i, item) in items.enumerated() {
            do {
                result.append(try duration(item, in: range))
            } catch {
                throw ValueProblem(reason: "step \(i + 1) \(error.reason)")
            }
        }
        return result
    }

    /// A PAM service name: it becomes a file name under /etc/pam.d, so no '/', no '.' or '..'.
    /// In lower case, as Linux-PAM's pam_start makes it: `Touchgate` reads /etc/pam.d/touchgate,
    /// and a client's PAM_SERVICE is never upper case.
    static func serviceName(_ text: String) throws(ValueProblem) -> String {
        let allowed = text.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "_") || b == UInt8(ascii: ".") || b == UInt8(ascii: "-")
        }
        guard allowed, (1...64).contains(text.utf8.count), text != ".", text != ".." else {
            throw ValueProblem(
                reason:
                    "must be a PAM service name (1 to 64 letters, digits, '_', '.' or '-'; not '.' or '..'), got '\(text)'"
            )
        }
        return text.lowercased()
    }

    /// `none`, or comma-separated PAM service names (`login,gdm-password`).
    static func serviceNames(_ text: String) throws(ValueProblem) -> [String] {
        if text == "none" { return [] }
        var names: [String] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false).map({ trimmed($0) }) {
            // "none" in a list is a slip, not a service of that name: the line means one or the other.
            guard item.lowercased() != "none" else {
                throw ValueProblem(reason: "must be none alone or a list of services, got '\(text)'")
            }
            let name = try serviceName(item)
            if !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// An absolute directory path: starts with '/', no NUL, no "." or ".." component.
    static func absolutePath(_ text: String) throws(ValueProblem) -> String {
        let parts = text.split(separator: "/", omittingEmptySubsequences: true)
        guard text.hasPrefix("/"), text.utf8.count <= 1024, !text.utf8.contains(0),
            !parts.contains(where: { $0 == "." || $0 == ".." })
        else {
            throw ValueProblem(reason: "must be an absolute path without '.' or '..' components, got '\(text)'")
        }
        return text
    }

    /// tpm2-tss's TCTI configuration: `name` or `name:config`, printable ASCII without blanks.
    static func tcti(_ text: String) throws(ValueProblem) -> String {
        let printable = text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
        guard printable, (1...256).contains(text.utf8.count), !text.hasPrefix(":") else {
            throw ValueProblem(
                reason: "must be a TPM interface such as device:/dev/tpmrm0 (printable, no blanks), got '\(text)'")
        }
        return text
    }

    /// `none`, or comma-separated PCR numbers 0 to 23, each once (`7` or `0,7`); sorted.
    static func pcrs(_ text: String) throws(ValueProblem) -> [Int] {
        if text == "none" { return [] }
        var seen = Set<Int>()
        for item in text.split(separator: ",", omittingEmptySubsequences: false).map({ trimmed($0) }) {
            let n: Int
            do { n = try count(item, in: 0...23) } catch {
                throw ValueProblem(reason: "must be none or PCR numbers 0 to 23 such as 7 or 0,7, got '\(text)'")
            }
            guard seen.insert(n).inserted else { throw ValueProblem(reason: "names PCR \(n) twice") }
        }
        return seen.sorted()
    }

    // MARK: helpers

    /// Whitespace around keys and values: spaces, tabs, and the CR of a CRLF file.
    static func isBlank(_ c: Character) -> Bool { c == " " || c == "\t" || c == "\r" || c == "\u{0B}" || c == "\u{0C}" }

    /// By index, never by walking the line backwards: each backward step over a run of regional
    /// indicators rescans the run, which made a 1 MB line take minutes.
    static func trimmed(_ s: Substring) -> String {
        guard let first = s.firstIndex(where: { !isBlank($0) }), let last = s.lastIndex(where: { !isBlank($0) }) else {
            return ""
        }
        return String(s[first...last])
    }

    /// Readable bounds in messages: `1 second`, `1 hour`, `3650 days`.
    static func describe(_ seconds: Int64) -> String {
        func plural(_ n: Int64, _ unit: String) -> String { n == 1 ? "1 \(unit)" : "\(n) \(unit)s" }
        if seconds != 0 && seconds % day == 0 { return plural(seconds / day, "day") }
        if seconds != 0 && seconds % hour == 0 { return plural(seconds / hour, "hour") }
        if seconds != 0 && seconds % minute == 0 { return plural(seconds / minute, "minute") }
        return plural(seconds, "second")
    }

    private static func unitSeconds(_ c: Character) -> Int64? {
        switch c {
        case "s": return 1
        case "m": return minute
        case "h": return hour
        case "d": return day
        default: return nil
        }
    }

    /// The text's ASCII digits, or nil unless it is one or more of them and nothing else.
    private static func decimalDigits(_ text: some StringProtocol) -> [UInt8]? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return bytes
    }

    /// The digits' value, or nil when it does not fit in 64 bits.
    private static func decimalValue(_ digits: [UInt8]) -> Int64? {
        var n: Int64 = 0
        for d in digits {
            let (times10, o1) = n.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int64(d - 0x30))
            if o1 || o2 { return nil }
            n = sum
        }
        return n
    }
}
