// The CLI's own words in English and Simplified Chinese (SPEC §8), and a sentence for each outcome.
import TouchGateWire

/// Whether the caller's locale asks for Simplified Chinese (`zh_CN.UTF-8`, `zh_SG`, `zh`).
let prefersChinese: Bool = {
    guard let locale = Caller.locale, locale.hasPrefix("zh") else { return false }
    // Traditional-script locales get English rather than the wrong script.
    return !["zh_TW", "zh_HK", "zh_MO", "Hant"].contains { locale.contains($0) }
}()

/// The English or the Chinese text, after the caller's locale.
func tr(_ english: String, _ chinese: String) -> String { prefersChinese ? chinese : english }

/// What a RESULT with a non-zero code means, when the daemon sent no MESSAGE.
func sentence(for code: Int32, reason: String?, seconds: Int32?) -> String {
    guard let outcome = Outcome(rawValue: code) else {
        return tr("touchgated answered with unknown code \(code)", "touchgated 返回了未知代码 \(code)")
    }
    switch outcome {
    case .success: return tr("success", "成功")
    case .authenticationFailed:
        return reason == "wrongPassword" ? tr("wrong password", "密码错误") : tr("fingerprint not recognised", "指纹未能识别")
    case .userCancel: return tr("cancelled", "已取消")
    case .userFallback: return tr("the password was chosen instead", "已改用密码")
    case .systemCancel: return tr("cancelled by the system", "被系统取消")
    case .passwordNotSet: return tr("the account has no usable password", "该账户没有可用的密码")
    case .biometryNotAvailable: return tr("no fingerprint reader is available", "没有可用的指纹读取器")
    case .biometryNotEnrolled:
        return tr("no fingerprints enrolled, or fingerprint authentication is not enabled", "未录入指纹，或未启用指纹认证")
    case .biometryLockout:
        return tr("fingerprint authentication is locked: enter your password", "指纹认证已锁定：请输入密码")
    case .appCancel: return tr("cancelled", "已取消")
    case .invalidContext: return tr("the request is no longer valid", "该请求已失效")
    case .passwordRequired:
        let why = reason.map { " (\($0))" } ?? ""
        return tr("a password is required first\(why)", "需要先输入密码\(why)")
    case .passwordBackoff:
        if let seconds { return tr("too many wrong passwords: try again in \(seconds) s", "密码错误次数过多：请 \(seconds) 秒后再试") }
        return tr("too many wrong passwords: try again later", "密码错误次数过多：请稍后再试")
    case .notInteractive: return tr("a prompt would be needed", "需要交互式提示")
    case .userUnknown: return tr("no such user", "没有该用户")
    case .notPermitted: return tr("not permitted", "不允许此操作")
    case .badRequest: return tr("touchgated refused the request as malformed", "touchgated 认为请求格式错误")
    case .internalError: return tr("internal error in touchgated", "touchgated 内部错误")
    case .notFound: return tr("no such finger enrolled", "未录入该手指")
    case .timeout: return tr("no finger was presented in time", "未在规定时间内按下手指")
    case .templateDamaged: return tr("the enrolled fingerprints are damaged: enroll them again", "已录入的指纹已损坏：请重新录入")
    case .busy: return tr("touchgated is busy (too many connections): try again", "touchgated 正忙（连接过多）：请重试")
    }
}

/// The line to show for a PROGRESS frame, or nil for keepalives and empty frames.
func progressLine(_ frame: Frame, enrolling finger: String? = nil) -> String? {
    let message = frame.string(.message).flatMap { $0.isEmpty ? nil : $0 }
    let kind = frame.int(.progress).flatMap(ProgressKind.init(rawValue:))
    switch kind {
    case .keepalive:
        return nil
    case .enrollStage:
        let stage = frame.int(.stage).map(String.init) ?? "?"
        let stages = frame.int(.stages).map(String.init) ?? "?"
        let head = tr("Enrolling \(finger ?? "finger"): stage \(stage)/\(stages)",
                      "正在录入 \(finger ?? "手指")：第 \(stage)/\(stages) 步")
        return message.map { "\(head) — \($0)" } ?? head
    case .prompt:
        return message ?? tr("Touch the fingerprint reader.", "请触摸指纹读取器。")
    case .retry:
        return message ?? tr("Try again.", "请重试。")
    case .noMatch:
        return message ?? tr("Not recognised, try again.", "未能识别，请重试。")
    case .queued:
        return message ?? tr("Waiting for the fingerprint reader…", "正在等待指纹读取器…")
    case nil:
        return message
    }
}
