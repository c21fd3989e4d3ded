// Linux-PAM's return codes, a line's actions and how a control token becomes them, as libpam
// 1.5.2 reads them (pam_handlers.c, pam_misc.c: _pam_parse_control, _pam_set_default_control).

/// Linux-PAM's return codes, by the names its `[value=action]` controls use (pam_tokens.h).
public enum PAMResult: Int, Sendable, CaseIterable, CustomStringConvertible {
    case success = 0, openErr, symbolErr, serviceErr, systemErr, bufErr, permDenied, authErr
    case credInsufficient, authinfoUnavail, userUnknown, maxtries, newAuthtokReqd, acctExpired
    case sessionErr, credUnavail, credExpired, credErr, noModuleData, convErr, authtokErr
    case authtokRecoverErr, authtokLockBusy, authtokDisableAging, tryAgain, ignore, abort
    case authtokExpired, moduleUnknown, badItem, convAgain, incomplete

    /// The keyword in a control, e.g. `authinfo_unavail`.
    public var keyword: String { Self.keywords[rawValue] }

    public var description: String { keyword }

    /// Exactly as written: Linux-PAM compares these names case-sensitively.
    public init?(keyword: String) {
        guard let i = Self.keywords.firstIndex(of: keyword) else { return nil }
        self.init(rawValue: i)
    }

    static let keywords = [
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
    /// Skip that many lines; a negative number (one that wrapped in Linux-PAM's int) is a jump it
    /// calls bad: the stack fails there and goes on.
    case jump(Int)

    /// In Linux-PAM's order (pam_tokens.h), which decides the first name a word starts with.
    static let named: [(String, PAMAction)] = [
        ("ignore", .ignore), ("ok", .ok), ("done", .done), ("bad", .bad), ("die", .die), ("reset", .reset),
    ]
}

/// A line's control: the action for each result.
public struct PAMControl: Equatable, Sendable {
    /// Indexed by `PAMResult.rawValue`.
    public private(set) var actions: [PAMAction]

    public func action(for result: PAMResult) -> PAMAction { actions[result.rawValue] }

    /// Every result `action`.
    public init(all action: PAMAction) { actions = Array(repeating: action, count: PAMResult.allCases.count) }

    /// `map`'s actions, `otherwise` for the rest.
    public init(_ map: [PAMResult: PAMAction], otherwise: PAMAction) {
        self.init(all: otherwise)
        for (result, action) in map { actions[result.rawValue] = action }
    }

    /// What Linux-PAM makes of a control it cannot parse, or of a line it rejects: every result fails.
    public static let allBad = PAMControl(all: .bad)

    /// `required`, `requisite`, `optional`, `sufficient` (any case, as Linux-PAM's strcasecmp).
    public static func keyword(_ word: String) -> PAMControl? {
        let success: [PAMResult] = [.success, .newAuthtokReqd]
        switch PAMConfigParser.asciiLowercased(word) {
        case "required":
            return PAMControl(
                Dictionary(uniqueKeysWithValues: success.map { ($0, .ok) } + [(.ignore, .ignore)]), otherwise: .bad)
        case "requisite":
            return PAMControl(
                Dictionary(uniqueKeysWithValues: success.map { ($0, .ok) } + [(.ignore, .ignore)]), otherwise: .die)
        case "optional":
            return PAMControl(Dictionary(uniqueKeysWithValues: success.map { ($0, .ok) }), otherwise: .ignore)
        case "sufficient":
            return PAMControl(Dictionary(uniqueKeysWithValues: success.map { ($0, .done) }), otherwise: .ignore)
        default: return nil
        }
    }

    /// A control that is no keyword, as `_pam_parse_control` reads it (the brackets already
    /// stripped by the tokenizer): `value=action` pairs, blanks allowed around `=`, names matched
    /// case-sensitively by prefix in Linux-PAM's order, `default=` filling only what is still
    /// unset, and every result not named failing (`bad`). A jump number is read into a 32-bit int
    /// as libpam reads it, wrapping: -1 to -5 are `ok`, `done`, `bad`, `die`, `reset`, -6 leaves the
    /// result unset, other negatives are jumps Linux-PAM calls bad. The error is Linux-PAM's words
    /// and the rest of the text, when it rejected the control and made every result `bad`.
    public static func parse(_ text: [UInt8]) -> (control: PAMControl, error: String?) {
        var set: [PAMAction?] = Array(repeating: nil, count: PAMResult.allCases.count)
        var i = 0
        func isSpace(_ c: UInt8) -> Bool { c == 0x20 || (0x09...0x0D).contains(c) }
        func skipSpace() { while i < text.count && isSpace(text[i]) { i += 1 } }
        func starts(with word: String) -> Bool {
            let w = Array(word.utf8)
            return text.count - i >= w.count && Array(text[i..<(i + w.count)]) == w
        }
        func failure(_ error: String) -> (PAMControl, String?) {
            (.allBad, "\(error); [...\(String(decoding: text[i...], as: UTF8.self))]")
        }
        while i < text.count {
            skipSpace()
            if i == text.count { break }
            // The return value (or `default`): the first name the text starts with.
            let names = PAMResult.keywords + ["default"]
            guard let index = names.firstIndex(where: starts(with:)) else { return failure("expecting return value") }
            i += names[index].utf8.count
            if i == text.count { return failure("expecting return value") }
            skipSpace()
            guard i < text.count, text[i] == UInt8(ascii: "=") else { return failure("expecting '='") }
            i += 1
            skipSpace()
            if i == text.count { return failure("expecting action") }
            var action: PAMAction?
            if let (name, named) = PAMAction.named.first(where: { starts(with: $0.0) }) {
                i += name.utf8.count
                action = named
            } else {
                guard (0x30...0x39).contains(text[i]) else { return failure("expecting jump number") }
                var n: Int32 = 0
                while i < text.count, (0x30...0x39).contains(text[i]) {
                    n = n &* 10 &+ Int32(text[i] - 0x30)
                    i += 1
                }
                switch n {
                case 0: return failure("expecting non-zero")
                case -5 ... -1: action = PAMAction.named[Int(-n)].1
                case -6: action = nil  // _PAM_ACTION_UNDEF: as if not named
                default: action = .jump(Int(n))
                }
            }
            if index < PAMResult.allCases.count {
                set[index] = action
            } else {
                for j in set.indices where set[j] == nil { set[j] = action }
            }
        }
        var control = PAMControl(all: .bad)
        for (j, action) in set.enumerated() { if let action { control.actions[j] = action } }
        return (control, nil)
    }
}
