// The login keyring (docs/spec.md §12): the user's login password kept sealed, released after a
// fingerprint match to a root login manager, void once the prints change, renewed by a password.
import Crypto
import Glibc
import Logging
import TouchGatePolicy
import TouchGateWire

extension Core {
    /// KEYRING_ENABLE: the login password, checked by the daemon (back-off applies), then sealed
    /// under the machine's key and bound to the user's current prints.
    /// The password is needed from root too (it is what is sealed); another user's account is
    /// refused before it is looked for, so a client sends none there.
    public func keyringEnable(user: String, password: String?, origin: Origin, caller: Caller) async -> Reply {
        if let refusal = await authorize(caller, user, .selfOrRoot) { return refusal }
        guard let password else { return Self.passwordNeeded }
        let ctx = EventContext(user: user, origin: origin, policy: nil, byUID: caller.uid)
        if case .refused(let refusal) = await verifyPassword(ctx, password, renewsKeyring: false) { return refusal }
        guard let snapshot = await currentSnapshot(user) else {
            return Refusal(.biometryNotEnrolled, reason: .noPrints, text: .notEnrolled)
        }
        if let failure = await keyringTurns.run(user, { await sealKeyring(user, password, snapshot) }) {
            log.error("keyring password not kept: \(failure)", metadata: ["user": "\(user)"])
            switch failure {
            case .noKey: return Refusal(.internalError, reason: .printsSealed, text: .keyringNotKept)
            case .keyFailed: return Refusal(.internalError, reason: .printsSealed, text: .keyringNotSealedNow)
            case .keyRefused: return Refusal(.internalError, reason: .printsSealed, text: .keyringSealingRefused)
            case .storage: return Self.storageFailure
            }
        }
        clientLine(uid: caller.uid, "keyring password kept", metadata: ["user": "\(user)", "by_uid": "\(caller.uid)"])
        return .success(.keyringKept)
    }

    /// KEYRING_DISABLE: the sealed password is deleted (nothing to delete is no error).
    public func keyringDisable(user: String, origin: Origin, caller: Caller) async -> Reply {
        if let refusal = await authorize(caller, user, .selfOrRoot) { return refusal }
        let files = keyring, pool = storagePool
        // nil: the storage threads were busy, or the file could not be removed. In the user's
        // keyring turn: a renewal that found the file set up never writes it back after this.
        let removed = await keyringTurns.run(user) {
            (try? await pool.run({ () -> Bool? in try? files.remove(user) })) != nil
        }
        guard removed else { return Self.storageFailure }
        clientLine(
            uid: caller.uid, "keyring password forgotten", metadata: ["user": "\(user)", "by_uid": "\(caller.uid)"])
        return .success(.keyringForgotten)
    }

    /// KEYRING_RENEW: root's PAM password stack changed the password (pam_touchgate's password line).
    public func keyringRenew(user: String, password: String, caller: Caller) async -> Reply {
        if let refusal = await authorize(caller, user, .rootOnly) { return refusal }
        if !password.isEmpty { await renewKeyring(user, password, changed: true) }
        return .success()
    }

    /// After a match: the sealed password for a root caller of a listed service that asked for it
    /// (nil otherwise). When it is set up but cannot be given, the person is told why, in one line.
    func releaseKeyring(_ r: EvaluateRequest, _ caller: Caller, client: any PromptClient) async -> SecretText? {
        guard r.wantAuthtok else { return nil }
        guard caller.isRoot, let service = r.origin.service, keyringServices.contains(service) else {
            log.notice(
                "keyring password not released: \(caller.isRoot ? "the service is not in keyring_services" : "the caller is not root")",
                metadata: [
                    "user": "\(r.user)", "service": "\(oneWord(r.origin.service ?? ""))", "uid": "\(caller.uid)",
                ])
            return nil
        }
        let snapshot = await currentSnapshot(r.user)
        let files = keyring, user = r.user
        guard let opening = try? await storagePool.run({ files.open(user, snapshot: snapshot) }) else { return nil }
        switch opening {
        case .off, .opens:
            return nil
        case .password(let secret):
            log.info("keyring password released", metadata: ["user": "\(r.user)", "service": "\(service)"])
            return secret
        case .void:
            log.notice(
                "keyring password void: the prints changed, or it was set aside", metadata: ["user": "\(r.user)"])
            client.show(ProgressEvent(.note, .keyringVoid))
            return nil
        case .unavailable(let why):
            log.error("keyring password cannot be opened: \(why)", metadata: ["user": "\(r.user)"])
            client.show(ProgressEvent(.note, .keyringClosed))
            return nil
        }
    }

    /// A password the daemon knows to be right (it checked it, or root's PAM stack did): a keyring
    /// password the user set up is sealed again with it, under the current prints — which also
    /// follows a password change. `changed`: root's password stack has just changed it, so the
    /// password kept is known to be old; one that cannot be sealed again is then set aside (void,
    /// renewed by the next password), never left to be released and later reported ready.
    func renewKeyring(_ user: String, _ password: String, changed: Bool = false) async {
        let snapshot = await currentSnapshot(user)
        let files = keyring, pool = storagePool
        // Checked and sealed in one turn, so a disable in between cannot be undone.
        await keyringTurns.run(user) {
            let setUp = try? await pool.run { () -> Result<Bool, StorageError> in
                do throws(StorageError) { return .success(try files.isSetUp(user)) } catch { return .failure(error) }
            }
            let why: String
            switch setUp {
            case .success(false)?: return  // nothing to renew
            case .failure(let untrusted)?:
                // Never written over (an untrusted file is never released either).
                log.error("keyring password not renewed: \(untrusted)", metadata: ["user": "\(user)"])
                return
            case .success(true)?:
                guard let snapshot else {
                    why = "no finger is enrolled to bind it to"
                    break
                }
                guard let failure = await sealKeyring(user, password, snapshot) else {
                    log.info("keyring password renewed", metadata: ["user": "\(user)"])
                    return
                }
                why = failure.description
            case nil:
                why = "the storage threads are busy"
            }
            guard changed else {
                if snapshot != nil { log.error("keyring password not renewed: \(why)", metadata: ["user": "\(user)"]) }
                return
            }
            await setAsideKeyring(user, because: why)
        }
    }

    /// The old password after a change that could not be sealed: set aside, or removed; said at
    /// error level when even that fails (it would then be released after a match).
    private func setAsideKeyring(_ user: String, because why: String) async {
        let files = keyring
        let done = try? await storagePool.run { () -> Result<KeyringFiles.Change, StorageError> in
            do throws(StorageError) { return .success(try files.setAside(user)) } catch { return .failure(error) }
        }
        switch done {
        case .success(.untouched)?, .success(.resealed)?: break  // none left to set aside
        case .success(.setAside)?:
            log.notice(
                "keyring password set aside after a password change, void until the next password: \(why)",
                metadata: ["user": "\(user)"])
        case .success(.removed)?:
            log.notice(
                "keyring password removed after a password change: \(why)", metadata: ["user": "\(user)"])
        case .failure(let e)?:
            log.error(
                "keyring password still holds the old password after a password change: \(why); \(e)",
                metadata: ["user": "\(user)"])
        case nil:
            let busy = "the storage threads are busy"
            log.error(
                "keyring password still holds the old password after a password change: \(why); \(busy)",
                metadata: ["user": "\(user)"])
        }
    }

    /// The same, once the current request has replied: a password check's answer does not wait
    /// for the keyring file to be read and sealed again.
    func renewKeyringAfterReply(_ user: String, _ password: String) {
        CoreLoop.shared.task { [self] in await renewKeyring(user, password) }
    }

    /// Seals on the storage threads; nil when it is on disk, else why not.
    private func sealKeyring(_ user: String, _ password: String, _ snapshot: String) async -> KeyringSealFailure? {
        let files = keyring
        do {
            let done = try await storagePool.run { () -> Result<Void, KeyringSealFailure> in
                do throws(KeyringSealFailure) {
                    try files.seal(user, password: password, snapshot: snapshot)
                    return .success(())
                } catch { return .failure(error) }
            }
            if case .failure(let e) = done { return e }
            return nil
        } catch {
            return .storage("the storage threads are busy")
        }
    }

    /// For status: off, ready, void (the prints changed) or unavailable, and why it is unavailable.
    func keyringState(_ user: String) async -> (state: String, detail: String?) {
        let snapshot = await currentSnapshot(user)
        let files = keyring
        // Only whether it opens: no String of the password is made for a status.
        switch try? await storagePool.run({ files.open(user, snapshot: snapshot, verifyOnly: true) }) {
        case .off?: return ("off", nil)
        case .opens?, .password?: return ("ready", nil)
        case .void?: return ("void", nil)
        case .unavailable(let why)?: return ("unavailable", why)
        case nil: return ("unavailable", "the storage threads are busy")
        }
    }

    /// Once the daemon is ready (docs/spec.md §12): `<state>/keyring-key` is retired when it is no
    /// longer the key — `keyring_without_tpm` is off, or the TPM's data key is ready. Each password
    /// it opens is sealed again under the data key, or removed when nothing here seals one; a void
    /// one is set aside. The file goes last, only once every user's file was dealt with: a failure
    /// loses no password that opens, and leaves the file (doctor warns) for the next start.
    func retireKeyringKeyFile() async {
        let key = keyring.key, files = keyring, pool = storagePool
        let path = "\(key.state.path)/\(KeyringKey.fileName)"
        let from: SymmetricKey?, to: SymmetricKey?
        switch try? await pool.run({ key.retirement() }) {
        case .notDue?: return
        case .later(let why)?:
            log.warning("\(path) is kept for now, though it is no longer the keyring key: \(why)")
            return
        case .retire(let f, let t)?: (from, to) = (f, t)
        case nil:
            log.error("\(path) is kept for now: the storage threads are busy")
            return
        }
        let listed = try? await pool.run { () -> Result<[String], StorageError> in
            do throws(StorageError) { return .success(try files.listedUsers()) } catch { return .failure(error) }
        }
        guard case .success(let users)? = listed else {
            log.error("\(path) is kept: \(files.users.path) cannot be listed")
            return
        }
        var kept = false
        for user in users {
            guard !stopping else { return }
            let done = await keyringTurns.run(user) { () -> Result<KeyringFiles.Change, StorageError>? in
                // The prints as they are in the user's turn (no enrollment's renewal between), on
                // every reader: ones that cannot be read now leave the file, and the key file, as they are.
                guard let entries = await prints.snapshotEntries(user) else {
                    return .failure(.io("read the prints of \(user)", EAGAIN))
                }
                let snapshot = TouchGatePolicy.enrollmentSnapshot(fingers: entries)
                return try? await pool.run { () -> Result<KeyringFiles.Change, StorageError> in
                    do throws(StorageError) {
                        return .success(try files.retire(user, snapshot: snapshot, from: from, to: to))
                    } catch { return .failure(error) }
                }
            }
            let who: Logger.Metadata = ["user": "\(user)"]
            switch done {
            case .success(.untouched)?: break
            case .success(.resealed)?:
                log.notice("keyring password sealed again under the TPM's data key", metadata: who)
            case .success(.removed)?: log.notice("keyring password removed: nothing here seals it", metadata: who)
            case .success(.setAside)?: log.notice("keyring password set aside: it was void", metadata: who)
            case .failure(let why)?:
                log.error("keyring password not moved off \(path): \(why)", metadata: who)
                kept = true
            case nil:
                log.error("keyring password not moved off \(path): the storage threads are busy", metadata: who)
                kept = true
            }
        }
        guard !kept else {
            log.error("\(path) is kept: some keyring passwords could not be moved off it (above)")
            return
        }
        let removed = try? await pool.run { () -> Result<Void, StorageError> in
            do throws(StorageError) { try key.removeFile() } catch { return .failure(error) }
            return .success(())
        }
        switch removed {
        case .success?: log.notice("removed \(path): it is no longer the keyring key")
        case .failure(let why)?: log.error("\(path) is kept: \(why)")
        case nil: log.error("\(path) is kept: the storage threads are busy")
        }
    }

    /// The identity of the user's current set of prints on every reader (nil: none): what the
    /// keyring password is bound to.
    func currentSnapshot(_ user: String) async -> String? {
        let info = await readerInfo(nil)
        return await enrollmentSnapshot(user, here: await prints.list(user, device: info?.deviceKey).prints)
    }
}
