// Swift's side of the message catalogs (gettext, text domain "touchgate"): a language, and lookups
// in it with printf-style placeholders that translators may reorder (%1$s, %2$d).
import CTouchGateL10n
import Glibc

/// A person's language, as a LANG-style locale name (nil: English, the msgids themselves).
public struct Language: Sendable, Equatable {
    public let locale: String?

    public init(locale: String?) {
        self.locale = locale.flatMap { $0.isEmpty ? nil : $0 }
    }

    public static let english = Language(locale: nil)
    public static let chinese = Language(locale: "zh_CN.UTF-8")

    /// The calling process's language: LC_ALL, then LC_MESSAGES, then LANG (POSIX precedence);
    /// then, as gettext lets it, LANGUAGE's list chooses the catalog ahead of that name (unless the
    /// locale is C): the language the process's own lines come out in, which its requests ask the
    /// daemon for (docs/spec.md §8).
    public static var ofProcess: Language {
        var named = Language.english
        for name in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            if let p = getenv(name), p.pointee != 0 {
                named = Language(locale: String(cString: p))
                break
            }
        }
        guard let list = getenv("LANGUAGE"), list.pointee != 0 else { return named }
        let chosen = lookup(named) { lang in
            var out = [CChar](repeating: 0, count: 72)
            tg_lang_catalog(lang, &out, out.count)
            return String(cString: out)
        }
        guard let chosen, !chosen.isEmpty else { return named }  // "": English anyway
        return Language(locale: chosen)  // "C": English
    }
}

extension Language {
    /// A client's LOCALE as the daemon takes it: the language of a catalog it has (the name's
    /// `ll_CC`: the catalogs are named so, and a locale of that name can be opened), in UTF-8, or
    /// English. Only those names reach the C library, which keeps every locale name it failed to
    /// open for good and searches them all at each open: a client sending made-up names would grow
    /// the daemon and slow every reply.
    public static func ofClient(_ locale: String?) -> Language {
        guard let locale, !locale.isEmpty else { return .english }
        let base = String(locale.prefix { $0 != "." && $0 != "@" })
        return base.contains("_") && Catalogs.languages.contains(base) ? Language(locale: base + ".UTF-8") : .english
    }
}

public enum Catalogs {
    /// The languages with a touchgate catalog in `directory` (`<ll_CC>/LC_MESSAGES/touchgate.mo`),
    /// read once.
    public static let languages: Set<String> = {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var found: Set<String> = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard !name.hasPrefix(".") else { continue }
            if access("\(directory)/\(name)/LC_MESSAGES/touchgate.mo", R_OK) == 0 { found.insert(name) }
        }
        return found
    }()

    /// Where compiled catalogs are read: TOUCHGATE_LOCALEDIR (the daemon's environment is root's;
    /// the CLI's is its own user's, who only ever changes their own messages), else the system's.
    /// The PAM module never reads this: its directory is fixed when it is built.
    public static let directory: String = {
        if let p = getenv("TOUCHGATE_LOCALEDIR"), p.pointee == 0x2F { return String(cString: p) }
        return "/usr/share/locale"
    }()
}

/// `msgid` in `language`, its placeholders filled with `arguments` in order (%s, %d; %N$s when
/// a translation reorders them). xgettext extracts the first argument of every `L(`.
// swift-format-ignore: AlwaysUseLowerCamelCase
// (xgettext's keyword: the name is what the catalogs' extraction looks for)
public func L(_ msgid: String, _ language: Language, _ arguments: CustomStringConvertible...) -> String {
    let text = lookup(language) { lang in
        msgid.withCString { m in tg_text(lang, m).map { String(cString: $0) } }  // inside: it may be m itself
    }
    return format(text ?? msgid, arguments.map(\.description))
}

/// The C library's sentence for errno value `e` in `language` (its own catalogs: the system's).
public func systemError(_ e: Int32, _ language: Language) -> String {
    lookup(language) { lang in tg_strerror(lang, e).map { String(cString: $0) } } ?? String(cString: strerror(e))
}

/// A sentence received in English (the daemon's, written before it knew the language) as the
/// catalog has it in `language`; itself when the catalog has none. Nothing is formatted.
public func translated(_ english: String, _ language: Language) -> String {
    lookup(language) { lang in english.withCString { m in tg_text(lang, m).map { String(cString: $0) } } } ?? english
}

/// The singular or plural form for `n` (the language's own rule). xgettext: `NL(` arguments 1, 2.
// swift-format-ignore: AlwaysUseLowerCamelCase
public func NL(
    _ singular: String, _ plural: String, _ n: Int, _ language: Language,
    _ arguments: CustomStringConvertible...
) -> String {
    let text = lookup(language) { lang in
        singular.withCString { s in
            plural.withCString { p in tg_text_plural(lang, s, p, UInt(clamping: n)).map { String(cString: $0) } }
        }
    }
    return format(text ?? (n == 1 ? singular : plural), arguments.map(\.description))
}

/// Runs `body` with the language's catalog open; nil for English (no catalog needed).
private func lookup(_ language: Language, _ body: (UnsafePointer<tg_lang>) -> String?) -> String? {
    guard let name = language.locale else { return nil }
    var lang = tg_lang()
    tg_lang_open_at(&lang, name, Catalogs.directory)
    defer { tg_lang_close(&lang) }
    return withUnsafePointer(to: &lang) { body($0) }
}

/// printf's placeholders, for text only: %s and %d take the next argument, %N$s and %N$d the Nth,
/// %% is a percent sign. Anything else is left as it is (catalogs are checked by msgfmt -c).
func format(_ template: String, _ arguments: [String]) -> String {
    guard template.utf8.contains(0x25) else { return template }
    var out = ""
    var next = 0
    var chars = template[...]
    while let i = chars.firstIndex(of: "%") {
        out += chars[..<i]
        var rest = chars[chars.index(after: i)...]
        if rest.first == "%" { out += "%"; chars = rest.dropFirst(); continue }
        var position: Int?
        let digits = rest.prefix(while: \.isNumber)
        if !digits.isEmpty, rest.dropFirst(digits.count).first == "$" {
            position = Int(digits).map { $0 - 1 }
            rest = rest.dropFirst(digits.count + 1)
        }
        guard let conversion = rest.first, conversion == "s" || conversion == "d" else {
            out += "%"
            chars = chars[chars.index(after: i)...]
            continue
        }
        let index = position ?? next
        if position == nil { next += 1 }
        out += arguments.indices.contains(index) ? arguments[index] : ""
        chars = rest.dropFirst()
    }
    return out + chars
}
