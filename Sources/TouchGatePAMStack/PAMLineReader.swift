// A pam.d file's bytes as Linux-PAM 1.5.2 reads them: `_pam_assemble_line` joins `\`-continued
// lines into its 1024-byte buffer, `_pam_StrTok` splits them into words. Both work on bytes and C
// strings, so this does too: a CR stays part of a word, a NUL ends the line.

/// One line as libpam hands it to the parser.
struct AssembledLine: Equatable {
    /// The text up to its first NUL, `#` comments cut, each `\` that continued it now a blank.
    let bytes: [UInt8]
    /// The physical line it starts on, 1-based.
    let number: Int
    /// The first physical line a continuation went on to past a blank or comment line (1.5.2
    /// skips those; later versions end the line there), else nil.
    let gapJoined: Int?
}

/// Why libpam 1.5.2 stops reading a file and fails it (`_pam_parse_conf_file` returns PAM_ABORT).
enum LineReaderFailure: Error, Equatable {
    /// The file ends while a `\` asks for more ("Incomplete read").
    case danglingContinuation(line: Int)
    /// Continued lines fill the buffer exactly: libpam's read loop never ends.
    case tooLong(line: Int)
}

struct PAMLineReader {
    static let bufferSize = 1024
    private let data: [UInt8]
    private var offset = 0
    /// Physical lines consumed so far (the next one is `line + 1`).
    private var line = 0

    init(_ data: [UInt8]) { self.data = data }

    private static let blank: Set<UInt8> = [0x20, 0x09, 0x0A]

    /// glibc's fgets into `buffer[at...]` with room for `size` bytes: at most size-1 bytes, up to
    /// and with the first '\n', then a NUL. nil at the end of the file with nothing read.
    private mutating func fgets(_ buffer: inout [UInt8], at p: Int, size: Int) -> Bool {
        if size == 1 {
            buffer[p] = 0
            return true
        }
        guard offset < data.count else { return false }
        var n = 0
        while n < size - 1 && offset < data.count {
            let c = data[offset]
            buffer[p + n] = c
            offset += 1
            n += 1
            if c == 0x0A {
                line += 1
                break
            }
        }
        buffer[p + n] = 0
        return true
    }

    private static func strlen(_ buffer: [UInt8], _ from: Int) -> Int {
        var i = from
        while buffer[i] != 0 { i += 1 }
        return i - from
    }

    /// The next line, nil at the end of the file; throws where libpam fails the file.
    mutating func next() throws(LineReaderFailure) -> AssembledLine? {
        var buffer = [UInt8](repeating: 0, count: Self.bufferSize)
        let end = Self.bufferSize
        var p = 0
        var used = 0
        var start: Int?
        var gapJoined: Int?
        var afterGap = false
        while true {
            if p >= end || end - p == 1 { throw .tooLong(line: start ?? line + 1) }
            let physical = line + 1
            guard fgets(&buffer, at: p, size: end - p) else {
                if used > 0 { throw .danglingContinuation(line: start ?? physical) }
                return nil
            }
            var s = p
            while buffer[s] != 0 && Self.blank.contains(buffer[s]) { s += 1 }
            guard buffer[s] != 0 && buffer[s] != UInt8(ascii: "#") else {
                // Nothing in this line: a continuation goes on past it.
                if start != nil { afterGap = true }
                continue
            }
            let os = s
            if start == nil { start = physical }
            if afterGap && gapJoined == nil { gapJoined = physical }
            while buffer[s] != 0 && buffer[s] != UInt8(ascii: "#") { s += 1 }
            if buffer[s] == UInt8(ascii: "#") {
                buffer[s] = 0
                used += Self.strlen(buffer, os)
                break
            }
            // A `\` as the last thing before blanks (spaces, tabs, the '\n') continues the line.
            s = os + Self.strlen(buffer, os)
            repeat { s -= 1 } while s > os && Self.blank.contains(buffer[s])
            if buffer[s] == UInt8(ascii: "\\") {
                buffer[s] = 0x20
                buffer[s + 1] = 0
                used += Self.strlen(buffer, os)
                p = s + 1
            } else {
                used += Self.strlen(buffer, os)
                break
            }
        }
        let length = Self.strlen(buffer, 0)
        return AssembledLine(bytes: Array(buffer[0..<length]), number: start ?? line, gapJoined: gapJoined)
    }
}

/// `_pam_StrTok(…, " \n\t", …)` over one line: words split on blanks, where a word that starts
/// with `[` runs to the first `]` (a `\]` inside is a `]`) and loses its brackets.
struct PAMWords {
    private let text: [UInt8]
    private var next: Int?

    init(_ text: [UInt8]) {
        self.text = text
        next = 0
    }

    private static func isDelimiter(_ c: UInt8) -> Bool { c == 0x20 || c == 0x0A || c == 0x09 }

    /// The next word, nil when none is left.
    mutating func word() -> [UInt8]? {
        guard var from = next else { return nil }
        while from < text.count && Self.isDelimiter(text[from]) { from += 1 }
        guard from < text.count else {
            next = nil
            return nil
        }
        var word: [UInt8] = []
        var end: Int
        if text[from] == UInt8(ascii: "[") {
            end = from + 1
            while end < text.count && text[end] != UInt8(ascii: "]") {
                if text[end] == UInt8(ascii: "\\") && end + 1 < text.count && text[end + 1] == UInt8(ascii: "]") {
                    end += 1
                }
                word.append(text[end])
                end += 1
            }
        } else {
            end = from
            while end < text.count && !Self.isDelimiter(text[end]) { end += 1 }
            word = Array(text[from..<end])
        }
        if end < text.count { end += 1 }  // the terminator (a blank or the `]`) is consumed
        next = end < text.count ? end : nil
        return word
    }

    /// What is left, word by word (`_pam_mkargv`).
    mutating func rest() -> [[UInt8]] {
        var words: [[UInt8]] = []
        while let w = word() { words.append(w) }
        return words
    }
}
