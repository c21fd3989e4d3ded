// How Debian 12's libpam builds one type's handler list from the files it reads
// (`_pam_parse_conf_file`, `_pam_load_conf_file`, Debian's `@include`), each file parsed once per
// review, and the bounds doctor keeps on a tree built to make it work without end.
import Synchronization

/// One pam.d file as libpam reads it, with its errors by line.
struct ParsedFile: Sendable {
    /// How the file is named in origins and errors: `common-auth`, `/usr/lib/pam.d/polkit-1`.
    let shown: String
    let parsed: PAMConfigParser.Parsed
    let errorsByLine: [Int: [PAMSyntaxError]]

    init(shown: String, bytes: [UInt8]) {
        self.shown = shown
        parsed = PAMConfigParser.parse(bytes, file: shown)
        errorsByLine = Dictionary(grouping: parsed.errors, by: \.line)
    }
}

/// The files one review has looked up, by name and lookup: each is read and parsed once.
final class ParsedFiles: Sendable {
    private let found = Mutex<[String: PAMDirectory.Located?]>([:])
    /// How many lookups went to the tree (tests count them).
    private let lookups = Mutex(0)

    var lookupCount: Int { lookups.withLock { $0 } }

    func value(for key: String, _ find: () -> PAMDirectory.Located?) -> PAMDirectory.Located? {
        if let known = found.withLock({ $0[key] }) { return known }
        let located = find()
        lookups.withLock { $0 += 1 }
        found.withLock { $0[key] = located }
        return located
    }
}

/// One type's handler list being built from the files libpam reads.
struct Assembly {
    let pam: PAMDirectory
    let type: String
    var entries: [StackEntry] = []
    var errors: [PAMSyntaxError] = []
    /// Why doctor stopped building the stack (a file too large, includes without end): nothing
    /// else counts.
    var unreviewed: PAMSyntaxError?
    /// An include loop: Linux-PAM cannot finish reading the service.
    var loop: PAMSyntaxError?
    /// The files being read, the innermost last, each with its substack level.
    private var chain: [(file: String, level: Int)] = []
    private var loads = 0
    private var linesRead = 0

    /// libpam 1.5.2 loads no file at substack level 16 or deeper ("maximum level of substacks
    /// reached"): the substack line fails there.
    static let maxLevel = 16
    /// Past these doctor stops and says the stack is not reviewed (no real stack is near them;
    /// libpam itself would take as long, or longer).
    static let maxLoads = 1000
    static let maxNesting = 64
    static let maxLines = 20000
    static let maxEntries = 500

    init(pam: PAMDirectory, type: String) {
        self.pam = pam
        self.type = type
    }

    private var stopped: Bool { unreviewed != nil || loop != nil }

    /// Reads a service's own file (every type); the reason libpam fails it, if it does.
    mutating func read(_ service: String) -> PAMSyntaxError? {
        let failure = load(service, requested: nil, level: 0, from: nil)
        return loop ?? failure
    }

    /// Adds `name`'s lines of type `requested` (nil: every type, as for a service's own file) at
    /// `level`; only lines of `type` go into the stack, but includes of every type are followed,
    /// as libpam follows them when it starts the service. Returns why libpam fails the file (the
    /// lines before stay), nil when it reads it or when `stopped`.
    private mutating func load(
        _ name: String?, requested: String?, level: Int, from: (file: String, line: Int)?
    ) -> PAMSyntaxError? {
        func failure(_ reason: String) -> PAMSyntaxError {
            PAMSyntaxError(file: from?.file ?? name ?? "", line: from?.line ?? 0, reason: reason)
        }
        guard level < Self.maxLevel else {
            return failure("substacks nested \(Self.maxLevel) deep: Linux-PAM reads none deeper")
        }
        guard let name else { return failure("no file to include") }
        loads += 1
        guard loads <= Self.maxLoads, chain.count < Self.maxNesting else {
            unreviewed = failure("its includes go on without end (past \(Self.maxLoads) files read): not reviewed")
            return nil
        }
        let file: ParsedFile
        switch pam.locate(name, included: from != nil) {
        case .file(let found)?: file = found
        case .tooLarge(let shown)?:
            let size = pam.tree.maxFileSize
            let limit = size % (1 << 20) == 0 ? "\(size >> 20) MiB" : "\(size) bytes"
            unreviewed = PAMSyntaxError(file: shown, line: 0, reason: "over \(limit): not read")
            return nil
        case nil: return failure("cannot read included file '\(name)'")
        }
        // The same file again on the same level: libpam 1.5.2 reads it again and again, each time
        // one file more open and one call deeper, until it can open no more or the stack
        // overflows (the application crashes). (A substack is one level deeper each time: libpam
        // stops it at 16.)
        if chain.contains(where: { $0.file == file.shown && $0.level == level }) {
            loop = failure(
                "an include loop ('\(name)' is included inside itself): Linux-PAM reads it until it runs out of open files or crashes"
            )
            return nil
        }
        linesRead += file.parsed.lines.count
        guard linesRead <= Self.maxLines else {
            unreviewed = failure("its includes hold more than \(Self.maxLines) lines: not reviewed")
            return nil
        }
        chain.append((file.shown, level))
        defer { chain.removeLast() }
        for line in file.parsed.lines {
            if stopped { return nil }
            let lineErrors = file.errorsByLine[line.number] ?? []
            let origin = "\(file.shown):\(line.number)"
            func add(_ kind: StackEntry.Kind, _ control: PAMControl, _ module: String?, _ args: [String], quiet: Bool) {
                guard entries.count < Self.maxEntries else {
                    unreviewed = PAMSyntaxError(
                        file: file.shown, line: line.number,
                        reason: "the stack is longer than \(Self.maxEntries) lines: not reviewed")
                    return
                }
                entries.append(
                    StackEntry(
                        kind: kind, control: control, module: module ?? "", arguments: args, quietIfMissing: quiet,
                        level: level, origin: origin))
            }
            let here = (file: file.shown, line: line.number)
            switch line.kind {
            case .includeAll(let target):
                // Debian's @include: the file's lines of the types being read; failing, it fails
                // the file being read for every type, or is one failing line of the one type.
                let mine = requested == nil || requested == type
                if mine { errors += lineErrors }
                let error = load(target, requested: requested, level: level, from: here)
                guard !stopped, let error else { continue }
                if requested == nil { return error }
                if mine {
                    errors.append(error)
                    add(.mustFail, .allBad, target, [], quiet: false)
                }
            case .module(let lineType, let control, let module, let args, let quiet, let rejected):
                // A type libpam does not know goes with the type being read (auth for a service's
                // own file). A service's own file is read for every type: a line of another type
                // can still fail it.
                let lineType = lineType ?? requested ?? "auth"
                guard requested == nil || lineType == requested else { continue }
                if let reason = Self.unnamed(module) {
                    return PAMSyntaxError(file: file.shown, line: line.number, reason: reason)
                }
                guard lineType == type else { continue }
                errors += lineErrors
                add(rejected ? .mustFail : .module, control, module, args, quiet: quiet)
            case .include(let lineType, let target, let substack):
                let lineType = lineType ?? requested ?? "auth"
                guard requested == nil || lineType == requested else { continue }
                if substack, let reason = Self.unnamed(target) {
                    return PAMSyntaxError(file: file.shown, line: line.number, reason: reason)
                }
                let mine = lineType == type
                if mine { errors += lineErrors }
                if mine && substack { add(.substack, .allBad, target, [], quiet: false) }
                let inner = level + (substack ? 1 : 0)
                let error = load(target, requested: lineType, level: inner, from: here)
                guard !stopped, mine, let error else { continue }
                errors.append(error)
                add(.mustFail, .allBad, target, [], quiet: false)
            }
        }
        return stopped ? nil : file.parsed.failure
    }

    /// libpam names each handler after its module (`extract_modulename`); a name that leaves
    /// nothing (or "?") makes it fail the whole file.
    private static func unnamed(_ module: String?) -> String? {
        guard let module else { return nil }
        var name = Substring(module.split(separator: "/", omittingEmptySubsequences: false).last ?? "")
        if let dot = name.lastIndex(of: ".") { name = name[..<dot] }
        guard name.isEmpty || name == "?" else { return nil }
        return "'\(module)' names no module: Linux-PAM fails the file"
    }
}
