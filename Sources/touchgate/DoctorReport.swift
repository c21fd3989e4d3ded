// The doctor's findings: one check per line (and how to fix it), or one JSON document.
import TouchGateL10n
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

struct DoctorCheck: Encodable, Equatable {
    enum Status: String, Encodable { case ok, note, problem, skipped }

    /// Which check: config, daemon, reader, pam, password-service, faillock, user.
    let check: String
    let status: Status
    /// What was found, one sentence.
    let summary: String
    /// What to do about it, when something is wrong.
    let fix: String?

    init(_ check: String, _ status: Status, _ summary: String, fix: String? = nil) {
        self.check = check
        self.status = status
        self.summary = summary
        self.fix = fix
    }

    static func skipped(_ check: String, _ what: String) -> DoctorCheck {
        DoctorCheck(check, .skipped, L("%s: not checked, touchgated is not reachable", cli, what))
    }
}

struct DoctorReport: Encodable {
    let checks: [DoctorCheck]

    var problems: Int { checks.filter { $0.status == .problem }.count }

    /// `status  check  summary`, a `fix:` line under each problem, then the verdict.
    func lines() -> [String] {
        let width = max(8, (checks.map(\.check.count).max() ?? 0) + 2)
        var out: [String] = []
        for c in checks {
            let status = label(c.status)
            let check = padded(c.check, width)
            out.append(padded(status, 9) + check + c.summary)
            if let fix = c.fix { out.append(String(repeating: " ", count: 9 + width) + L("fix: ", cli) + fix) }
        }
        out.append(problems == 0 ? L("All is well.", cli) : NL("%d problem.", "%d problems.", problems, cli, problems))
        return out
    }

    func json() -> String {
        struct Document: Encodable {
            let ok: Bool
            let problems: Int
            let checks: [DoctorCheck]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data =
            (try? encoder.encode(Document(ok: problems == 0, problems: problems, checks: checks))) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// `text` and spaces up to `width` columns (at least one space after it). A wide character
    /// (Chinese: 问题, 正常) takes two columns of a terminal.
    private func padded(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(1, width - Self.columns(text)))
    }

    /// Terminal columns: two for East Asian wide and fullwidth characters, one for the rest.
    static func columns(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { n, s in
            let v = s.value
            let wide =
                (0x1100...0x115F).contains(v) || (0x2E80...0xA4CF).contains(v) || (0xAC00...0xD7A3).contains(v)
                || (0xF900...0xFAFF).contains(v) || (0xFE30...0xFE4F).contains(v) || (0xFF00...0xFF60).contains(v)
                || (0xFFE0...0xFFE6).contains(v) || (0x20000...0x3FFFD).contains(v)
            return n + (wide ? 2 : 1)
        }
    }

    private func label(_ status: DoctorCheck.Status) -> String {
        switch status {
        case .ok: return L("ok", cli)
        case .note: return L("note", cli)
        case .problem: return L("problem", cli)
        case .skipped: return L("skipped", cli)
        }
    }
}
