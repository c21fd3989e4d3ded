// Reading the daemon's JSON documents (status, events) into readable lines.
#if canImport(FoundationEssentials)
import TouchGateL10n
import FoundationEssentials
#else
import Foundation
#endif
import TouchGateWire
#if canImport(Glibc)
import Glibc
#endif

/// Any JSON value; enough to show documents whose keys the CLI does not need to know.
enum JSONValue: Decodable, Equatable {
    case null, bool(Bool), int(Int64), double(Double), string(String)
    case array([JSONValue]), object([String: JSONValue])

    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? c.decode(Double.self) {
            self = .double(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    static func parse(_ text: String) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    /// A scalar as a person reads it; nil for arrays and objects.
    var scalarText: String? {
        switch self {
        case .null: return L("none", cli)
        case .bool(let b): return b ? L("yes", cli) : L("no", cli)
        case .int(let i): return String(i)
        case .double(let d): return String(d)
        case .string(let s): return s
        case .array, .object: return nil
        }
    }

    subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }
}

/// A JSON document on one line. JSON allows no raw newline inside a string, so every line break
/// and the indentation after it lie between tokens, and dropping them changes no value.
func oneLine(_ json: String) -> String {
    var out = ""
    var afterBreak = false
    for c in json {
        if c == "\n" || c == "\r\n" || c == "\r" { afterBreak = true; continue }
        if afterBreak && (c == " " || c == "\t") { continue }
        afterBreak = false
        out.append(c)
    }
    return out
}

/// `key: value` lines, sorted by key; nested objects as `outer.inner`, lists of scalars joined by commas.
func keyValueLines(_ value: JSONValue) -> [String] {
    var lines: [(String, String)] = []
    func walk(_ v: JSONValue, _ path: String) {
        switch v {
        case .object(let o):
            for (k, inner) in o { walk(inner, path.isEmpty ? k : "\(path).\(k)") }
        case .array(let a) where a.allSatisfy({ $0.scalarText != nil }):
            lines.append((path, a.isEmpty ? L("none", cli) : a.compactMap(\.scalarText).joined(separator: ", ")))
        case .array(let a):
            for (i, inner) in a.enumerated() { walk(inner, "\(path).\(i)") }
        default:
            lines.append((path.isEmpty ? "value" : path, v.scalarText ?? ""))
        }
    }
    walk(value, "")
    return lines.sorted { $0.0 < $1.0 }.map { "\($0.0): \($0.1)" }
}

/// One event as `time user service outcome reason`, `-` for what the event does not carry.
func eventSummary(_ event: JSONValue) -> String {
    func text(_ keys: String...) -> String? {
        for k in keys { if let s = event[k]?.scalarText, event[k] != .null, !s.isEmpty { return s } }
        return nil
    }
    let time: String
    switch event["time"] {
    case .int(let t): time = localTime(t)
    case .double(let t): time = localTime(Int64(t))
    default: time = text("time") ?? "-"
    }
    let outcome: String
    switch event["outcome"] {
    case .object(let o): outcome = o["name"]?.scalarText ?? o["code"]?.scalarText ?? "-"
    case .int(let code): outcome = Outcome(rawValue: Int32(clamping: code))?.name ?? String(code)
    case .string(let name): outcome = name
    default: outcome = text("outcomeName", "name", "event", "type", "kind") ?? "-"
    }
    // The service and the user come from whoever asked: each stays one word, with nothing in it
    // that a terminal would take as a line break or a control sequence.
    let words = [text("user") ?? "-", text("service") ?? "-", outcome, text("reason") ?? "-"].map(oneWord)
    return ([time] + words).joined(separator: " ")
}

/// Seconds since the epoch as local `YYYY-MM-DD HH:MM:SS`.
private func localTime(_ seconds: Int64) -> String {
    var t = time_t(seconds)
    var parts = tm()
    guard localtime_r(&t, &parts) != nil else { return String(seconds) }
    var buffer = [UInt8](repeating: 0, count: 32)
    let n = buffer.withUnsafeMutableBufferPointer { b in
        b.withMemoryRebound(to: CChar.self) { strftime($0.baseAddress, $0.count, "%Y-%m-%d %H:%M:%S", &parts) }
    }
    return n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : String(seconds)
}
