// One /etc/pam.d file as lines: type, control (with Linux-PAM's action maps), module and arguments.

/// Linux-PAM's return codes, by the names its `[value=action]` controls use (pam_handlers.c).
public enum PAMResult: Int, Sendable, CaseIterable, CustomStringConvertible {
    case success = 0, openErr, symbolErr, serviceErr, systemErr, bufErr, permDenied, authErr
    case credInsufficient, authinfoUnavail, userUnknown, maxtries, newAuthtokReqd, acctExpired
    case sessionErr, credUnavail, credExpired, credErr, noModuleData, convErr, authtokErr
    case authtokRecoverErr, authtokLockBusy, authtokDisableAging, tryAgain, ignore, abort
    case authtokExpired, moduleUnknown, badItem, convAgain, incomplete

    /// The keyword in a control, e.g. `authinfo_unavail`.
    public var keyword: String { Self.keywords[rawValue] }

    public var description: String { keyword }

    public init?(keyword: String) {
        guard let i = Self.keywords.firstIndex(of: keyword.lowercased()) else { return nil }
        self.init(rawValue: i)
    }

    private static let keywords = [
        "success", "open_err", "symbol_err", "service_err", "system_err", "buf_err", "perm_denied",
        "auth_err", "cred_insufficient", "authinfo_unavail", "user_unknown", "maxtries",
        "new_authtok_reqd", "acct_expired", "session_err", "cred_unavail", "cred_expired", "cred_err",
        "no_module_data", "conv_err", "authtok_err", "authtok_recover_err", "authtok_lock_busy",
        "authtok_disable_aging", "try_again", "ignore", "abort", "authtok_expired", "module_unknown",
        "bad_item", "conv_again", "incomplete",
    ]
}

/// What a line's control does with a module's result.
public enum PAMAction: Equatable, Sendable {
    case ignore, ok, done, bad, die, reset
    case jump(Int)
}

/// A line's control: an action per result, or an include of another file.
public enum PAMControl: Equatable, Sendable {
    case actions([PAMResult: PAMAction], otherwise: PAMAction)
    case include(String)
    case substack(String)

    /// `required`, `requisite`, `sufficient`, `optional`, `definitive`, as Linux-PAM defines them.
    static func keyword(_ word: String) -> PAMControl? {
        switch word.lowercased() {
        case "required": return .actions([.success: .ok, .newAuthtokReqd: .ok, .ignore: .ignore], otherwise: .bad)
        case "requisite": return .actions([.success: .ok, .newAuthtokReqd: .ok, .ignore: .ignore], otherwise: .die)
        case "optional": return .actions([.success: .ok, .newAuthtokReqd: .ok], otherwise: .ignore)
        case "sufficient": return .actions([.success: .done, .newAuthtokReqd: .done], otherwise: .ignore)
        case "definitive":
            return .actions([.success: .done, .newAuthtokReqd: .done, .ignore: .ignore], otherwise: .die)
        default: return nil
        }
    }

    public func action(for result: PAMResult) -> PAMAction {
        guard case .actions(let map, let otherwise) = self else { return .ignore }
        return map[result] ?? otherwise
    }
}

/// One line of a PAM file, or an `@include`.
public struct PAMLine: Equatable, Sendable {
    public enum Kind: Equatable, Sendable {
        /// `type control module args…`
        case module(type: String, control: PAMControl, path: String, arguments: [String], quietIfMissing: Bool)
        /// `@include FILE`: every type's lines of FILE.
        case includeAll(String)
    }

    public let kind: Kind
    public let file: String
    public let number: Int
}

/// A line Linux-PAM would reject, with where and why.
public struct PAMSyntaxError: Error, Equatable, Sendable, CustomStringConvertible {
    public let file: String
    public let line: Int
    public let reason: String
    public var description: String { "\(file):\(line): \(reason)" }
}

public enum PAMConfigParser {
    /// The lines of one file's text; `file` names it in errors. Bad lines become errors, as
    /// Linux-PAM logs them; the rest still count (it skips only the bad line).
    public static func parse(_ text: String, file: String) -> (lines: [PAMLine], errors: [PAMSyntaxError]) {
        var lines: [PAMLine] = []
        var errors: [PAMSyntaxError] = []
        for (number, logical) in logicalLines(text) {
            let words = tokens(logical)
            guard let first = words.first else { continue }
            if first.lowercased() == "@include" {
                guard words.count == 2 else {
                    errors.append(PAMSyntaxError(file: file, line: number, reason: "@include takes one file name"))
                    continue
                }
                lines.append(PAMLine(kind: .includeAll(words[1]), file: file, number: number))
                continue
            }
            guard words.count >= 3 else {
                errors.append(
                    PAMSyntaxError(file: file, line: number, reason: "expected 'type control module', got '\(logical)'")
                )
                continue
            }
            var type = first.lowercased()
            let quiet = type.hasPrefix("-")
            if quiet { type.removeFirst() }
            guard ["auth", "account", "password", "session"].contains(type) else {
                errors.append(PAMSyntaxError(file: file, line: number, reason: "unknown type '\(first)'"))
                continue
            }
            let control: PAMControl
            switch words[1].lowercased() {
            case "include": control = .include(words[2])
            case "substack": control = .substack(words[2])
            default:
                guard let parsed = parseControl(words[1]) else {
                    errors.append(PAMSyntaxError(file: file, line: number, reason: "bad control '\(words[1])'"))
                    continue
                }
                control = parsed
            }
            let isInclude: Bool
            if case .actions = control { isInclude = false } else { isInclude = true }
            lines.append(
                PAMLine(
                    kind: .module(
                        type: type, control: control, path: isInclude ? "" : words[2],
                        arguments: Array(words.dropFirst(3)), quietIfMissing: quiet),
                    file: file, number: number))
        }
        return (lines, errors)
    }

    /// `required` … or `[success=2 default=ignore]`.
    static func parseControl(_ text: String) -> PAMControl? {
        if let known = PAMControl.keyword(text) { return known }
        guard text.hasPrefix("["), text.hasSuffix("]") else { return nil }
        var map: [PAMResult: PAMAction] = [:]
        var otherwise = PAMAction.ignore
        for pair in text.dropFirst().dropLast().split(whereSeparator: { $0 == " " || $0 == "\t" }) {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let action = parseAction(String(parts[1])) else { return nil }
            let key = parts[0].lowercased()
            if key == "default" {
                otherwise = action
            } else if let result = PAMResult(keyword: key) {
                map[result] = action
            } else {
                return nil
            }
        }
        return .actions(map, otherwise: otherwise)
    }

    static func parseAction(_ text: String) -> PAMAction? {
        switch text.lowercased() {
        case "ignore": return .ignore
        case "ok": return .ok
        case "done": return .done
        case "bad": return .bad
        case "die": return .die
        case "reset": return .reset
        default:
            guard let n = Int(text), n > 0 else { return nil }
            return .jump(n)
        }
    }

    /// Lines with comments removed and `\`-continuations joined, each with its first line's number.
    static func logicalLines(_ text: String) -> [(Int, String)] {
        var result: [(Int, String)] = []
        var pending = ""
        var start = 0
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = Substring(raw)
            if line.hasSuffix("\r") { line = line.dropLast() }
            if pending.isEmpty { start = i + 1 }
            // '#' starts a comment wherever it is (Linux-PAM strips it before splitting the line).
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            if line.hasSuffix("\\") {
                pending += line.dropLast() + " "
                continue
            }
            pending += line
            result.append((start, pending))
            pending = ""
        }
        if !pending.isEmpty { result.append((start, pending)) }
        return result
    }

    /// Words split on blanks; `[…]` is one word even with blanks inside (controls, arguments).
    static func tokens(_ line: String) -> [String] {
        var words: [String] = []
        var current = ""
        var depth = 0
        for c in line {
            if c == "[" { depth += 1 }
            if c == "]" && depth > 0 { depth -= 1 }
            if (c == " " || c == "\t") && depth == 0 {
                if !current.isEmpty { words.append(current); current = "" }
            } else {
                current.append(c)
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }
}
