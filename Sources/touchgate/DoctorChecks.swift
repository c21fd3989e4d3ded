// The doctor's checks: each turns a fact (config, daemon, reader, PAM, user) into lines with fixes.
import TouchGateConfig
import TouchGatePAMStack
import TouchGateWire
#if canImport(Glibc)
import Glibc
#endif

enum DoctorChecks {
    /// touchgate.conf under `root`; also the password service it names (the default when invalid).
    static func config(root: String) -> (DoctorCheck, String) {
        let path = under(root, ConfigFile.defaultPath)
        let restart = tr("correct it (touchgate check-config \(path)), then: systemctl restart touchgated",
                         "修正后（touchgate check-config \(path)）执行：systemctl restart touchgated")
        do {
            let config = try ConfigFile.load(path: path)
            if access(path, F_OK) != 0 {
                return (DoctorCheck("config", .ok, tr("\(path): none, the defaults apply", "\(path)：不存在，使用默认值")),
                        config.passwordService)
            }
            return (DoctorCheck("config", .ok, tr("\(path): valid", "\(path)：有效")), config.passwordService)
        } catch let error as ConfigError {
            let place = error.line > 0 ? "\(path):\(error.line)" : path
            return (DoctorCheck("config", .problem,
                                tr("\(place): \(error.message) (touchgated refuses to start)",
                                   "\(place)：\(error.message)（touchgated 拒绝启动）"), fix: restart),
                    DaemonConfig.defaults.passwordService)
        } catch {
            return (DoctorCheck("config", .problem, "\(path): \(error)", fix: restart), DaemonConfig.defaults.passwordService)
        }
    }

    /// Whether the daemon answers, and its readers.
    static func daemon(_ client: DaemonClient) -> (checks: [DoctorCheck], reachable: Bool) {
        let devices: [String]
        do {
            devices = try client.call(.devices, []).strings(.device)
        } catch {
            return ([DoctorCheck("daemon", .problem, error.reason,
                                 fix: tr("systemctl start touchgated.socket; if it does not stay up: journalctl -u touchgated",
                                         "systemctl start touchgated.socket；若无法保持运行：journalctl -u touchgated")),
                     DoctorCheck.skipped("reader", tr("fingerprint reader", "指纹读取器"))], false)
        }
        let daemon = DoctorCheck("daemon", .ok, tr("touchgated answers at \(client.socketPath)",
                                                   "touchgated 在 \(client.socketPath) 响应"))
        guard !devices.isEmpty else {
            return ([daemon, DoctorCheck("reader", .problem, tr("no fingerprint reader found", "未找到指纹读取器"),
                                         fix: tr("connect a reader libfprint supports, then: systemctl restart touchgated",
                                                 "连接 libfprint 支持的读取器，然后执行：systemctl restart touchgated"))], true)
        }
        return ([daemon, DoctorCheck("reader", .ok, devices.joined(separator: "; "))], true)
    }

    /// Which services offer the fingerprint, and what is wrong in their stacks.
    static func pam(_ review: PAMReview) -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        if review.services.isEmpty {
            checks.append(DoctorCheck("pam", .problem, tr("no PAM service offers the fingerprint", "没有 PAM 服务提供指纹认证"),
                                      fix: "pam-auth-update --enable touchgate"))
        } else {
            let names = review.services.map(\.service).joined(separator: ", ")
            let source = review.commonAuthFingerprint ? tr(" (through common-auth)", "（通过 common-auth）") : ""
            checks.append(DoctorCheck("pam", .ok, tr("fingerprint offered by: \(names)\(source)", "提供指纹认证的服务：\(names)\(source)")))
        }
        if review.commonAuthFingerprint && !review.commonAuthReport {
            checks.append(DoctorCheck("pam", .problem,
                                      tr("common-auth has no report line: a password cannot clear a fingerprint lockout",
                                         "common-auth 缺少 report 行：密码无法解除指纹锁定"),
                                      fix: "pam-auth-update --enable touchgate-report"))
        }
        for service in review.services {
            for problem in service.problems {
                if case .faillockCountsFingerprint = problem { continue }  // the faillock check says it
                checks.append(stackProblem(problem, in: service.service))
            }
        }
        return checks
    }

    static func stackProblem(_ problem: StackProblem, in service: String) -> DoctorCheck {
        let name = "pam \(service)"
        switch problem {
        case .fingerprintBlocksPassword(let how):
            return DoctorCheck(name, .problem,
                               tr("when the fingerprint fails (\(how)) the right password is refused too",
                                  "指纹失败（\(how)）时正确的密码也被拒绝"),
                               fix: tr("give the pam_touchgate.so line default=ignore, as the touchgate profile does",
                                       "将 pam_touchgate.so 行设为 default=ignore，与 touchgate 配置文件相同"))
        case .noReportAfterPassword:
            return DoctorCheck(name, .problem,
                               tr("a password success never reaches a report line: it cannot clear a lockout or the after-boot rule",
                                  "密码成功后不会到达 report 行：无法解除锁定或开机后的密码要求"),
                               fix: tr("after the password module: auth optional pam_touchgate.so report (pam-auth-update --enable touchgate-report)",
                                       "在密码模块之后加入：auth optional pam_touchgate.so report（pam-auth-update --enable touchgate-report）"))
        case .reportAfterWrongPassword(let origin):
            return DoctorCheck(name, .problem,
                               tr("the report line at \(origin) is reached after a wrong password: it would clear a lockout without the password",
                                  "\(origin) 的 report 行在密码错误后也会执行：不输入密码即可解除锁定"),
                               fix: tr("place it where only a password success leads (after pam_unix's success jump)",
                                       "只把它放在密码成功后才会到达的位置（pam_unix 成功跳转之后）"))
        case .acceptsWrongPassword:
            return DoctorCheck(name, .problem, tr("the stack succeeds with a wrong password and no finger", "密码错误且无指纹时认证仍然成功"),
                               fix: tr("end the password part with pam_deny.so, as common-auth does", "像 common-auth 一样以 pam_deny.so 结束密码部分"))
        case .faillockCountsFingerprint(let origin):
            return DoctorCheck(name, .problem,
                               tr("pam_faillock authfail at \(origin) runs although the password was right: a fingerprint failure counts against the password",
                                  "密码正确时 \(origin) 的 pam_faillock authfail 仍会执行：指纹失败被计入密码失败"),
                               fix: tr("put the pam_touchgate.so line after pam_faillock preauth and let its failure go on to the password module (default=ignore)",
                                       "把 pam_touchgate.so 行放在 pam_faillock preauth 之后，并让其失败继续到密码模块（default=ignore）"))
        case .missingModule(let module, let origin):
            return DoctorCheck(name, .problem, tr("\(origin): \(module) is not installed", "\(origin)：未安装 \(module)"),
                               fix: tr("install the package that provides \(module), or remove the line", "安装提供 \(module) 的软件包，或删除该行"))
        case .syntax(let error):
            return DoctorCheck(name, .problem, "\(error)", fix: tr("correct the line", "修正该行"))
        }
    }

    /// The daemon's own password service.
    static func passwordService(_ r: PasswordServiceReview) -> [DoctorCheck] {
        let name = "password"
        guard r.exists else {
            let fallback = r.file.map { tr(" (Linux-PAM would use '\($0)')", "（Linux-PAM 将使用“\($0)”）") } ?? ""
            return [DoctorCheck(name, .problem, tr("no /etc/pam.d/\(r.service)\(fallback)", "缺少 /etc/pam.d/\(r.service)\(fallback)"),
                                fix: tr("apt install --reinstall touchgate, or create it with: auth required pam_unix.so",
                                        "执行 apt install --reinstall touchgate，或创建该文件：auth required pam_unix.so"))]
        }
        var checks: [DoctorCheck] = []
        if !r.touchgateLines.isEmpty {
            checks.append(DoctorCheck(name, .problem,
                                      tr("service '\(r.service)' reaches pam_touchgate.so (\(r.touchgateLines.joined(separator: ", "))): the daemon would ask itself for a finger",
                                         "服务“\(r.service)”包含 pam_touchgate.so（\(r.touchgateLines.joined(separator: ", "))）：守护进程会向自己索要指纹"),
                                      fix: tr("list the password modules in /etc/pam.d/\(r.service) instead of including common-auth",
                                              "在 /etc/pam.d/\(r.service) 中直接列出密码模块，而不是包含 common-auth")))
        }
        if !r.acceptsPassword {
            checks.append(DoctorCheck(name, .problem, tr("service '\(r.service)' accepts no password", "服务“\(r.service)”不接受任何密码"),
                                      fix: tr("add: auth required pam_unix.so", "加入：auth required pam_unix.so")))
        }
        if !r.refusesWrongPassword {
            checks.append(DoctorCheck(name, .problem, tr("service '\(r.service)' accepts a wrong password", "服务“\(r.service)”接受错误的密码"),
                                      fix: tr("remove pam_permit.so lines that can decide it", "删除可能决定结果的 pam_permit.so 行")))
        }
        if !r.missingFromLogin.isEmpty, let reference = r.comparedWith {
            let lacking = r.missingFromLogin.joined(separator: ", ")
            checks.append(DoctorCheck(name, .problem,
                                      tr("'\(reference)' also uses \(lacking), which service '\(r.service)' lacks: they accept different passwords",
                                         "“\(reference)”还使用了 \(lacking)，而服务“\(r.service)”没有：两者接受的密码不同"),
                                      fix: tr("copy those lines from common-auth into /etc/pam.d/\(r.service)",
                                              "把这些行从 common-auth 复制到 /etc/pam.d/\(r.service)")))
        }
        for problem in r.problems { checks.append(stackProblem(problem, in: r.service)) }
        if checks.isEmpty {
            let modules = r.passwordModules.joined(separator: ", ")
            checks.append(DoctorCheck(name, .ok, tr("service '\(r.service)' checks passwords with \(modules), without pam_touchgate.so",
                                                    "服务“\(r.service)”使用 \(modules) 验证密码，不含 pam_touchgate.so")))
        }
        return checks
    }

    static func faillock(_ review: PAMReview) -> DoctorCheck {
        guard review.faillockInUse else { return DoctorCheck("faillock", .ok, tr("pam_faillock is not used", "未使用 pam_faillock")) }
        for service in review.services {
            for case .faillockCountsFingerprint(let origin) in service.problems {
                return stackProblem(.faillockCountsFingerprint(origin), in: service.service)
            }
        }
        return DoctorCheck("faillock", .ok, tr("a fingerprint failure does not count against pam_faillock",
                                                "指纹失败不计入 pam_faillock"))
    }

    /// The user: enabled, enrolled, and whether a fingerprint would be accepted now.
    static func user(_ user: String, _ client: DaemonClient) -> [DoctorCheck] {
        let name = "user"
        let document: JSONValue
        do {
            let result = try client.call(.status, [Field(.user, user)])
            guard let text = result.string(.json), let value = JSONValue.parse(text) else {
                return [DoctorCheck(name, .problem, tr("touchgated sent no status for \(user)", "touchgated 没有返回 \(user) 的状态"))]
            }
            document = value
        } catch {
            return [DoctorCheck(name, .problem, "\(user): \(error.reason)")]
        }
        var fingers: [String] = []
        if case .array(let list)? = document["fingers"] { fingers = list.compactMap(\.scalarText) }
        if document["stateReadable"] == .bool(false) {
            return [DoctorCheck(name, .problem, tr("\(user): the state file is damaged; fingerprints are refused until a password success",
                                                   "\(user)：状态文件已损坏；在成功输入密码前拒绝指纹"),
                                fix: tr("authenticate once with the password", "用密码认证一次"))]
        }
        if fingers.isEmpty {
            return [DoctorCheck(name, .problem, tr("\(user) has no enrolled fingerprint", "\(user) 未录入指纹"),
                                fix: tr("touchgate enroll (as \(user)), or: touchgate enroll --user \(user)",
                                        "以 \(user) 身份执行 touchgate enroll，或：touchgate enroll --user \(user)"))]
        }
        if document["enabled"] == .bool(false) {
            return [DoctorCheck(name, .problem, tr("\(user) turned fingerprint authentication off", "\(user) 已停用指纹认证"),
                                fix: "touchgate enable --user \(user)")]
        }
        var checks = [DoctorCheck(name, .ok, tr("\(user): enabled, enrolled: \(fingers.joined(separator: ", "))",
                                                "\(user)：已启用，已录入：\(fingers.joined(separator: ", "))"))]
        if case .object(let can)? = document["canEvaluate"], case .int(let code)? = can["code"], code != 0 {
            let reason = can["reason"]?.scalarText.flatMap { $0.isEmpty ? nil : $0 }
            checks.append(DoctorCheck(name, .note,
                                      tr("fingerprint refused for now: \(sentence(for: Int32(clamping: code), reason: reason, seconds: nil))",
                                         "指纹暂不可用：\(sentence(for: Int32(clamping: code), reason: reason, seconds: nil))"),
                                      fix: tr("authenticate once with the password (e.g. sudo -v)", "用密码认证一次（例如 sudo -v）")))
        }
        return checks
    }

    /// `path` (absolute) under `root`.
    static func under(_ root: String, _ path: String) -> String {
        if root == "/" || root.isEmpty { return path }
        return (root.hasSuffix("/") ? String(root.dropLast()) : root) + path
    }
}
