// Fixture roots for the PAM tests: a temporary directory with etc/pam.d files, removed afterwards.
#if canImport(Glibc)
import Glibc
#endif
import TouchGatePAMStack

struct FixtureError: Error { let what: String }

/// A temporary root holding `etc/pam.d/<name>` for each file given.
final class FixtureRoot {
    let path: String

    init(_ files: [String: String]) throws {
        var template = Array("/tmp/tg-pamstack-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw FixtureError(what: "mkdtemp") }
        path = String(cString: made)
        try makeDirectory("etc")
        try makeDirectory("etc/pam.d")
        for (name, text) in files { try write("etc/pam.d/\(name)", text) }
    }

    func makeDirectory(_ relative: String) throws {
        guard mkdir(path + "/" + relative, 0o755) == 0 || errno == EEXIST else {
            throw FixtureError(what: "mkdir \(relative)")
        }
    }

    func write(_ relative: String, _ text: String) throws {
        guard let f = fopen(path + "/" + relative, "w") else { throw FixtureError(what: "open \(relative)") }
        defer { fclose(f) }
        let bytes = Array(text.utf8)
        guard fwrite(bytes, 1, bytes.count, f) == bytes.count else { throw FixtureError(what: "write \(relative)") }
    }

    func symlink(_ relative: String, to target: String) throws {
        guard Glibc.symlink(target, path + "/" + relative) == 0 else { throw FixtureError(what: "symlink \(relative)") }
    }

    /// Creates each directory of `relative` that is missing.
    func makeDirectories(_ relative: String) throws {
        var sofar = ""
        for part in relative.split(separator: "/") {
            sofar += (sofar.isEmpty ? "" : "/") + part
            try makeDirectory(sofar)
        }
    }

    var pam: PAMDirectory { PAMDirectory(root: path) }

    deinit {
        // Only what this fixture made: files in etc/pam.d and lib dirs, then the directories.
        remove(path)
    }

    private func remove(_ dir: String) {
        guard let d = opendir(dir) else { unlink(dir); return }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) {
                String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(d)
        for name in names {
            let child = dir + "/" + name
            var st = stat()
            if lstat(child, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR { remove(child) } else { unlink(child) }
        }
        rmdir(dir)
    }
}

/// Debian 12's common-auth as pam-auth-update writes it with the touchgate and touchgate-report
/// profiles enabled beside unix (the install test compares the real one with this shape).
let debianCommonAuthWithTouchgate = """
    # here are the per-package modules (the "Primary" block)
    auth\t[success=2 default=ignore]\tpam_touchgate.so
    auth\t[success=1 default=ignore]\tpam_unix.so nullok try_first_pass
    # here's the fallback if no module succeeds
    auth\trequisite\t\t\tpam_deny.so
    # prime the stack with a positive return value if there isn't one already;
    auth\trequired\t\t\tpam_permit.so
    # and here are more per-package modules (the "Additional" block)
    auth\toptional\tpam_touchgate.so report
    # end of pam-auth-update config

    """

/// The same without touchgate: Debian 12's stock common-auth.
let debianCommonAuth = """
    auth\t[success=1 default=ignore]\tpam_unix.so nullok
    auth\trequisite\t\t\tpam_deny.so
    auth\trequired\t\t\tpam_permit.so

    """

/// Debian's login and sudo: their own lines around `@include common-auth`.
let debianLogin = """
    auth       optional   pam_faildelay.so  delay=3000000
    auth       requisite  pam_nologin.so
    @include common-auth
    auth       optional   pam_group.so
    @include common-account

    """

let debianSudo = """
    #%PAM-1.0
    session    required   pam_limits.so
    @include common-auth
    @include common-account
    @include common-session-noninteractive

    """

/// Debian's `other`: the common files.
let debianOther = "@include common-auth\n@include common-account\n"

/// The password service the touchgate package ships.
let shippedPasswordService = """
    auth     required  pam_unix.so
    account  required  pam_deny.so

    """
