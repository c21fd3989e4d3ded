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
    /// Each file read and parsed once, for every stack of this directory's review.
    let files = ParsedFiles()

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

    enum Located: Sendable {
        case file(ParsedFile)
        /// There, but larger than doctor reads: Linux-PAM reads it, so it is not missing.
        case tooLarge(shown: String)

        var shown: String {
            switch self {
            case .file(let file): file.shown
            case .tooLarge(let shown): shown
            }
        }
    }

    /// The file libpam opens for `name`, parsed. A service's file falls back to /usr/lib/pam.d; an
    /// `include`, `substack` or `@include` target (`included`) does not: libpam builds its path as
    /// /etc/pam.d/NAME.
    func locate(_ name: String, included: Bool = false) -> Located? {
        files.value(for: name + (included ? "\0include" : "\0service")) { find(name, included: included) }
    }

    private func find(_ name: String, included: Bool) -> Located? {
        guard !name.isEmpty, !name.contains("\0") else { return nil }
        let directories = included ? Array(Self.directories.prefix(1)) : Self.directories
        let candidates =
            name.hasPrefix("/")
            ? [(name, name)] : directories.map { ($0 + "/" + name, $0 == "/etc/pam.d" ? name : $0 + "/" + name) }
        for (path, shown) in candidates {
            switch tree.read(path) {
            case .file(let bytes)?: return .file(ParsedFile(shown: shown, bytes: bytes))
            case .directory?:
                // fopen succeeds, the first read fails: no lines.
                return .file(ParsedFile(shown: shown, bytes: []))
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
