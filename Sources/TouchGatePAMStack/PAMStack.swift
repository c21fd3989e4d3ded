// A service's stack for one type, as Debian 12's libpam builds its handler list: the service's
// file (looked up in /etc/pam.d, then /usr/lib/pam.d), `other`'s lines for a type the service has
// none of, `include` and `@include` inlined (a name without a directory is /etc/pam.d's alone), a
// `substack` one level deeper, rejected lines kept.

/// One entry of libpam's handler list for a type.
public struct StackEntry: Equatable, Sendable {
    public enum Kind: Equatable, Sendable {
        /// A module line: Linux-PAM calls the module.
        case module
        /// A `substack` line: skipped when run (it counts in jumps); its lines follow one level deeper.
        case substack
        /// A line Linux-PAM keeps but fails whenever it is reached (PAM_PERM_DENIED): a type or
        /// control it rejects, no module, an include it cannot read.
        case mustFail
    }

    public let kind: Kind
    public let control: PAMControl
    /// The module as written (`pam_unix.so` or an absolute path); a substack's file; "" for none.
    public let module: String
    public let arguments: [String]
    /// A `-type` line: Linux-PAM does not log it when the module is missing (it still fails).
    public let quietIfMissing: Bool
    /// 0 in the service's stack, one more inside each substack.
    public let level: Int
    /// Where it was written: `common-auth:17`.
    public let origin: String

    public init(
        kind: Kind = .module, control: PAMControl, module: String, arguments: [String] = [],
        quietIfMissing: Bool = false, level: Int = 0, origin: String
    ) {
        self.kind = kind
        self.control = control
        self.module = module
        self.arguments = arguments
        self.quietIfMissing = quietIfMissing
        self.level = level
        self.origin = origin
    }

    /// The module's file name without directory and `.so`: `pam_unix`.
    public var moduleName: String {
        var name = module.split(separator: "/").last.map(String.init) ?? module
        if name.hasSuffix(".so") { name.removeLast(3) }
        return name
    }

    /// Whether the line names pam_touchgate.so, even with blanks or a carriage return stuck to it.
    public var namesTouchgate: Bool {
        var name = Substring(module.split(separator: "/").last ?? "")
        while let last = name.last, last.isWhitespace { name = name.dropLast() }
        return name == "pam_touchgate.so"
    }
}

public struct AssembledStack: Equatable, Sendable {
    /// libpam's handler list for the type, in order.
    public var entries: [StackEntry] = []
    /// Problems of the lines read for it.
    public var errors: [PAMSyntaxError] = []
    /// The file whose lines these are: the service's own, or `other` when the service's file has
    /// no line of this type or is missing; nil when neither exists.
    public var serviceFile: String?
    /// Why Linux-PAM cannot start the service at all (pam_start fails, every call fails).
    public var failure: PAMSyntaxError?
    /// Why doctor could not build the stack (a file too large to read): nothing else here counts.
    public var unreviewed: PAMSyntaxError?

    /// The lines Linux-PAM calls a module for.
    public var modules: [StackEntry] { entries.filter { $0.kind == .module } }
}

/// The pam.d directories under a root directory (tests point it at a fixture tree).
public struct PAMDirectory: Sendable {
    public let tree: RootedTree
    /// Where Debian 12's libpam looks for a service's file (and `other`) named without a directory.
    /// An include of such a name is looked for in the first alone.
    public static let directories = ["/etc/pam.d", "/usr/lib/pam.d"]
    /// Deeper include chains end here (libpam stops substacks at 16; an include loop at this).
    static let maxDepth = 16

    public init(root: String = "/", maxFileSize: Int = RootedTree.defaultMaxFileSize) {
        tree = RootedTree(root: root, maxFileSize: maxFileSize)
    }

    /// The service names: the regular files of both directories, backups left out, sorted.
    public func services() -> [String] {
        var names = Set<String>()
        for dir in Self.directories {
            for entry in tree.entries(dir) ?? [] where entry.isFile {
                let name = entry.name
                if name.hasPrefix(".") || name.hasSuffix("~") || name.hasSuffix(".dpkg-old")
                    || name.hasSuffix(".dpkg-dist") || name.hasSuffix(".pam-old") || name.hasSuffix(".pam-new")
                {
                    continue
                }
                names.insert(name)
            }
        }
        return names.sorted()
    }

    /// Whether Linux-PAM finds a file for the service (else it uses `other`).
    public func hasFile(_ service: String) -> Bool { locate(service) != nil }

    enum Located {
        case file(shown: String, bytes: [UInt8])
        /// There, but larger than doctor reads: Linux-PAM reads it, so it is not missing.
        case tooLarge(shown: String)

        var shown: String {
            switch self {
            case .file(let shown, _), .tooLarge(let shown): shown
            }
        }
    }

    /// The file libpam opens for `name`. A service's file falls back to /usr/lib/pam.d; an
    /// `include`, `substack` or `@include` target (`included`) does not: libpam builds its path as
    /// /etc/pam.d/NAME.
    func locate(_ name: String, included: Bool = false) -> Located? {
        guard !name.isEmpty, !name.contains("\0") else { return nil }
        let directories = included ? Array(Self.directories.prefix(1)) : Self.directories
        let candidates =
            name.hasPrefix("/")
            ? [(name, name)] : directories.map { ($0 + "/" + name, $0 == "/etc/pam.d" ? name : $0 + "/" + name) }
        for (path, shown) in candidates {
            switch tree.read(path) {
            case .file(let bytes)?: return .file(shown: shown, bytes: bytes)
            case .directory?: return .file(shown: shown, bytes: [])  // fopen succeeds, the first read fails: no lines
            case .tooLarge?: return .tooLarge(shown: shown)
            case nil: continue
            }
        }
        return nil
    }

    /// The `type` stack of `service` (`auth`, …).
    public func stack(service: String, type: String) -> AssembledStack {
        var result = AssembledStack()
        // A service without a file of its own: `other` alone. (For the service named "other" libpam
        // reads the file twice; no application asks for it by that name.)
        let ownName = service == "other" ? nil : locate(service).map { _ in service }
        var own = Assembly(pam: self, type: type)
        var other = Assembly(pam: self, type: type)
        var failure: PAMSyntaxError?
        if let ownName { failure = own.read(ownName) }
        // libpam reads `other` too, for types the service lacks; failing there fails every service.
        let otherExists = locate("other") != nil
        if failure == nil && otherExists { failure = other.read("other") }
        if failure == nil && ownName == nil && !otherExists {
            failure = PAMSyntaxError(
                file: service, line: 0, reason: "neither this service nor 'other' has a file: Linux-PAM fails it")
        }
        result.failure = failure
        if let unreviewed = own.unreviewed ?? other.unreviewed {
            // Neither missing nor `other`'s: a stack doctor did not see whole.
            result.unreviewed = unreviewed
            result.failure = nil
            result.serviceFile = ownName.flatMap { locate($0)?.shown } ?? "other"
            return result
        }
        if !own.entries.isEmpty || !otherExists {
            result.entries = own.entries
            result.errors = own.errors
            result.serviceFile = ownName.flatMap { locate($0)?.shown }
        } else {
            result.entries = other.entries
            result.errors = own.errors + other.errors
            result.serviceFile = "other"
        }
        return result
    }
}

/// One type's handler list being built from the files libpam reads.
private struct Assembly {
    let pam: PAMDirectory
    let type: String
    var entries: [StackEntry] = []
    var errors: [PAMSyntaxError] = []
    /// A file doctor did not read: the rest of the reading stops.
    var unreviewed: PAMSyntaxError?

    init(pam: PAMDirectory, type: String) {
        self.pam = pam
        self.type = type
    }

    /// Reads a service's own file (every type); the reason libpam fails it, if it does.
    mutating func read(_ service: String) -> PAMSyntaxError? {
        load(service, requested: nil, level: 0, depth: 0, from: nil)
    }

    /// Adds `name`'s lines of type `requested` (nil: every type, as for a service's own file) at
    /// `level`. Returns why libpam fails the file (the lines before stay), nil when it reads it.
    private mutating func load(
        _ name: String?, requested: String?, level: Int, depth: Int, from: (file: String, line: Int)?
    ) -> PAMSyntaxError? {
        func failure(_ reason: String) -> PAMSyntaxError {
            PAMSyntaxError(file: from?.file ?? name ?? "", line: from?.line ?? 0, reason: reason)
        }
        guard let name else { return failure("no file to include") }
        guard depth < PAMDirectory.maxDepth else { return failure("includes nested too deep (a loop?)") }
        let file: String
        let bytes: [UInt8]
        switch pam.locate(name, included: from != nil) {
        case .file(let shown, let content)?: (file, bytes) = (shown, content)
        case .tooLarge(let shown)?:
            let size = pam.tree.maxFileSize
            let limit = size % (1 << 20) == 0 ? "\(size >> 20) MiB" : "\(size) bytes"
            unreviewed = PAMSyntaxError(file: shown, line: 0, reason: "over \(limit): not read")
            return nil
        case nil: return failure("cannot read included file '\(name)'")
        }
        let parsed = PAMConfigParser.parse(bytes, file: file)
        for line in parsed.lines {
            let lineErrors = parsed.errors.filter { $0.line == line.number }
            let origin = "\(file):\(line.number)"
            func add(_ kind: StackEntry.Kind, _ control: PAMControl, _ module: String?, _ args: [String], quiet: Bool) {
                entries.append(
                    StackEntry(
                        kind: kind, control: control, module: module ?? "", arguments: args, quietIfMissing: quiet,
                        level: level, origin: origin))
            }
            switch line.kind {
            case .includeAll(let target):
                // Debian's @include: the file's lines of the types being read; failing, it fails
                // the file being read for every type, or is one failing line of the one type.
                errors += lineErrors
                let error = load(
                    target, requested: requested, level: level, depth: depth + 1, from: (file, line.number))
                if unreviewed != nil { return nil }
                guard let error else { continue }
                if requested == nil { return error }
                errors.append(error)
                add(.mustFail, .allBad, target, [], quiet: false)
            case .module(let lineType, let control, let module, let args, let quiet, let rejected):
                // A type libpam does not know goes with the type being read (auth for a service's
                // own file). A service's own file is read for every type: a line of another type
                // can still fail it.
                let lineType = lineType ?? requested ?? "auth"
                guard requested == nil || lineType == requested else { continue }
                if let reason = Self.unnamed(module) {
                    return PAMSyntaxError(file: file, line: line.number, reason: reason)
                }
                guard lineType == type else { continue }
                errors += lineErrors
                add(rejected ? .mustFail : .module, control, module, args, quiet: quiet)
            case .include(let lineType, let target, let substack):
                let lineType = lineType ?? requested ?? "auth"
                guard requested == nil || lineType == requested else { continue }
                if substack, let reason = Self.unnamed(target) {
                    return PAMSyntaxError(file: file, line: line.number, reason: reason)
                }
                guard lineType == type else { continue }
                errors += lineErrors
                if substack { add(.substack, .allBad, target, [], quiet: false) }
                let inner = level + (substack ? 1 : 0)
                let error = load(target, requested: type, level: inner, depth: depth + 1, from: (file, line.number))
                if unreviewed != nil { return nil }
                if let error {
                    errors.append(error)
                    add(.mustFail, .allBad, target, [], quiet: false)
                }
            }
        }
        return parsed.failure
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
