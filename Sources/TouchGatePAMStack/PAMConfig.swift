// One pam.d file as lines, as Debian 12's libpam (Linux-PAM 1.5.2 and Debian's `@include`) reads
// it: a line Linux-PAM rejects is kept where it is, failing, as libpam keeps it.

/// One line of a PAM file.
public struct PAMLine: Equatable, Sendable {
    public enum Kind: Equatable, Sendable {
        /// `type control module args…`. `type` nil: not a type Linux-PAM knows, and it puts the
        /// line in the stack being read (auth for a service's own file). `rejected`: Linux-PAM
        /// keeps the line but fails it whenever it is reached (PAM_PERM_DENIED); `module` may then
        /// be nil (none given).
        case module(
            type: String?, control: PAMControl, module: String?, arguments: [String], quietIfMissing: Bool,
            rejected: Bool)
        /// `type include FILE` or `type substack FILE`; `file` nil when none is given.
        case include(type: String?, file: String?, substack: Bool)
        /// `@include FILE` (Debian): the lines of FILE of the types being read.
        case includeAll(String?)
    }

    public let kind: Kind
    public let file: String
    public let number: Int
}

/// Something wrong with a line, with where and why.
public struct PAMSyntaxError: Error, Equatable, Sendable, CustomStringConvertible {
    public let file: String
    public let line: Int
    public let reason: String
    /// `file:line: reason`; `file: reason` for the whole file (line 0).
    public var description: String { line == 0 ? "\(file): \(reason)" : "\(file):\(line): \(reason)" }

    public init(file: String, line: Int, reason: String) {
        self.file = file
        self.line = line
        self.reason = reason
    }
}

public enum PAMConfigParser {
    /// What libpam reads in one file.
    public struct Parsed: Equatable, Sendable {
        public var lines: [PAMLine] = []
        /// Lines Linux-PAM rejects (and keeps, failing), and readings that differ between versions.
        public var errors: [PAMSyntaxError] = []
        /// Why libpam stops reading the file and fails it, when it does (the lines before stay).
        public var failure: PAMSyntaxError?
    }

    static let types = ["auth", "account", "password", "session"]

    /// The lines of one file's bytes; `file` names it in errors.
    public static func parse(_ data: [UInt8], file: String) -> Parsed {
        var parsed = Parsed()
        var reader = PAMLineReader(data)
        reading: while true {
            let assembled: AssembledLine
            do {
                guard let next = try reader.next() else { break reading }
                assembled = next
            } catch {
                switch error {
                case .danglingContinuation(let line):
                    parsed.failure = PAMSyntaxError(
                        file: file, line: line, reason: "the file ends in a '\\' continuation: Linux-PAM fails the file"
                    )
                case .tooLong(let line):
                    parsed.failure = PAMSyntaxError(
                        file: file, line: line,
                        reason:
                            "continued lines longer than Linux-PAM's 1023-byte line: it never finishes reading the file"
                    )
                }
                break reading
            }
            let line = parseLine(assembled, file: file, errors: &parsed.errors)
            if let gap = assembled.gapJoined {
                parsed.errors.append(
                    PAMSyntaxError(
                        file: file, line: assembled.number,
                        reason:
                            "a '\\' continuation goes on past a blank or comment line to line \(gap): Linux-PAM 1.5 reads them as one line, later versions as two"
                    ))
            }
            if assembled.bytes.contains(0x0D) {
                parsed.errors.append(
                    PAMSyntaxError(
                        file: file, line: assembled.number,
                        reason: "a carriage return (a file with CRLF line ends?): Linux-PAM takes it as part of a word")
                )
            }
            if let line { parsed.lines.append(line) }
        }
        return parsed
    }

    /// `text` as bytes.
    public static func parse(_ text: String, file: String) -> Parsed { parse(Array(text.utf8), file: file) }

    private static func string(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// As C's strcasecmp compares: ASCII letters only.
    static func asciiLowercased(_ text: String) -> String {
        String(decoding: text.utf8.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// One assembled line as `_pam_parse_conf_file` reads it.
    private static func parseLine(_ assembled: AssembledLine, file: String, errors: inout [PAMSyntaxError]) -> PAMLine?
    {
        var words = PAMWords(assembled.bytes)
        let number = assembled.number
        func reject(_ reason: String) { errors.append(PAMSyntaxError(file: file, line: number, reason: reason)) }
        func line(_ kind: PAMLine.Kind) -> PAMLine { PAMLine(kind: kind, file: file, number: number) }
        guard var typeWord = words.word().map(string) else { return nil }
        let quiet = typeWord.hasPrefix("-")
        if quiet { typeWord.removeFirst() }
        if asciiLowercased(typeWord) == "@include" {
            let target = words.word().map(string)
            if target == nil { reject("@include without a file: Linux-PAM fails the service") }
            return line(.includeAll(target))
        }
        let type = types.first { $0 == asciiLowercased(typeWord) }
        var rejected = type == nil
        if type == nil { reject("unknown type '\(typeWord)': Linux-PAM fails this line") }
        guard let controlWord = words.word() else {
            reject("no control: Linux-PAM fails this line")
            return line(
                .module(type: type, control: .allBad, module: nil, arguments: [], quietIfMissing: quiet, rejected: true)
            )
        }
        let word = asciiLowercased(string(controlWord))
        if word == "include" || word == "substack" {
            let target = words.word().map(string)
            if target == nil { reject("\(word) without a file: Linux-PAM fails this line") }
            return line(.include(type: type, file: target, substack: word == "substack"))
        }
        let control: PAMControl
        if let known = PAMControl.keyword(word) {
            control = known
        } else {
            let (parsed, error) = PAMControl.parse(controlWord)
            control = parsed
            if let error { reject("bad control (\(error)): Linux-PAM fails this line whatever the module returns") }
        }
        let module = words.word().map(string)
        if module == nil {
            rejected = true
            reject("no module: Linux-PAM fails this line")
        }
        return line(
            .module(
                type: type, control: control, module: module, arguments: words.rest().map(string),
                quietIfMissing: quiet, rejected: rejected))
    }
}
