// evaluate: the queue, the tries, lockout on disk before the reply, and every way a prompt ends early.
import Glibc
import Testing
@testable import TouchGateCore
import TouchGateReader
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: evaluate")
@CoreActor struct EvaluateTests {
    @Test func aPromptQueuedBehindAnotherIsToldHowManyAreAheadAndGetsTheReaderInTurn() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.hold, .match)
            let (first, firstClient, firstInput) = core.startEvaluate()
            #expect(await firstClient.waitFor(.prompt))
            let (second, secondClient, _) = core.startEvaluate(caller: .alice)
            #expect(await secondClient.waitFor(.queued))
            let (third, thirdClient, _) = core.startEvaluate()
            #expect(await thirdClient.waitFor(.queued))
            #expect(secondClient.texts(.queued) == [.queued(ahead: 1)])
            #expect(thirdClient.texts(.queued) == [.queued(ahead: 2)])
            #expect(!secondClient.kinds().contains(.prompt))

            firstInput.deliver(.cancel)
            #expect(await first.value() == Refusal(.appCancel, reason: .cancelled, text: .cancelled))
            #expect(await second.value() == .success(.recognised))
            #expect(secondClient.kinds() == [.queued, .prompt])
            // The third was next in line; its scan is not scripted, so the reader fails it.
            #expect(await third.value()?.reason == .readerError)
            #expect(bed.reader.verifications.count == 3)
        }
    }

    /// A client that reads no keys could not leave the wait, and its password module waits on it:
    /// refused at once while another prompt holds the reader, as fprintd refuses a second claim.
    @Test func aPromptWhoseClientReadsNoKeysIsNotQueuedButRefusedAtOnce() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.hold)
            let (holder, holderClient, holderInput) = core.startEvaluate()
            #expect(await holderClient.waitFor(.prompt))
            let (keyless, keylessClient, _) = core.startEvaluate(noTerminal: true)
            #expect(await keyless.value() == Refusal(.biometryNotAvailable, reason: .busy, text: .readerBusy))
            #expect(!keylessClient.kinds().contains(.queued))
            #expect(bed.reader.verifications.count == 1)

            holderInput.deliver(.cancel)
            #expect(await holder.value() == Refusal(.appCancel, reason: .cancelled, text: .cancelled))
        }
    }

    /// Root locks alice while her prompt listens, before its first scan or after a failed match
    /// (the prompt's own change to her state must not hide the lock): the next match is refused.
    @Test(arguments: [false, true])
    func aLockMadeWhileThePromptListensRefusesTheFingerGivenAfterIt(afterAFailedMatch: Bool) async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            if afterAFailedMatch { bed.reader.script(.noMatch) }
            bed.reader.script(.matchOnRelease)
            let (running, client, _) = core.startEvaluate()
            #expect(await client.waitFor(afterAFailedMatch ? .noMatch : .prompt))
            #expect(await core.lock(user: "alice", origin: Origin(), caller: .root).isSuccess)
            bed.reader.releaseScan()
            let reply = try #require(await running.value())
            #expect(reply.outcome == .passwordRequired && reply.reason == .adminLock)
        }
    }

    /// Time passes while the prompt listens (a late touch, retries): a finger given after a rule
    /// of time began to ask the password (idle, interval) is refused, though nothing else changed.
    @Test func aFingerGivenAfterARuleOfTimeBeganIsRefused() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.matchOnRelease)
            let (running, client, _) = core.startEvaluate()
            #expect(await client.waitFor(.prompt))
            bed.clock.advance(49 * 3600)
            bed.reader.releaseScan()
            let reply = try #require(await running.value())
            #expect(reply.outcome == .passwordRequired, "\(reply)")
        }
    }

    /// The same lock made while the prompt was being prepared: after it judged alice, while it read
    /// her templates (held here by busy storage threads), before it listened.
    @Test func aLockMadeWhileThePromptReadItsTemplatesRefusesTheFingerGivenAfterIt() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let hold = try #require(await PoolHold(core.storagePool, threads: 2))
            bed.reader.script(.match(0))
            let (running, client, _) = core.startEvaluate()
            _ = await loopUntil { core.storagePool.waiting > 0 }  // the prompt's template read waits
            #expect(core.storagePool.waiting == 1)
            // The lock is decided in memory at once; its write waits for a storage thread too.
            let before = core.states.version("alice")
            let locking = Running { await core.lock(user: "alice", origin: Origin(), caller: .root) }
            _ = await loopUntil { core.states.version("alice") != before }
            #expect(core.states.version("alice") != before)
            await hold.release()
            #expect(await locking.value()?.isSuccess == true)
            let reply = try #require(await running.value())
            #expect(reply.outcome == .passwordRequired && reply.reason == .adminLock)
            #expect(client.kinds().contains(.prompt))  // judged again at the match, not before
        }
    }

    /// The match is judged again at once, but that judgement reads the prints, which may wait for
    /// the storage threads (a chip's listing changed, so nothing is cached): a lock made in that
    /// wait still refuses the finger.
    @Test func aLockMadeWhileTheMatchIsJudgedAgainRefusesIt() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.matchOnRelease)
            let (running, client, _) = core.startEvaluate()
            #expect(await client.waitFor(.prompt))
            bed.reader.chipListingChanged()  // every cached list of prints dropped
            let hold = try #require(await PoolHold(core.storagePool, threads: 2))
            bed.reader.releaseScan()
            _ = await loopUntil { core.storagePool.waiting > 0 }  // the judgement's read of the prints
            let before = core.states.version("alice")
            let locking = Running { await core.lock(user: "alice", origin: Origin(), caller: .root) }
            _ = await loopUntil { core.states.version("alice") != before }
            #expect(core.states.version("alice") != before)  // the lock is decided, in memory
            await hold.release()
            #expect(await locking.value()?.isSuccess == true)
            let reply = try #require(await running.value())
            #expect(reply.outcome == .passwordRequired && reply.reason == .adminLock, "\(reply)")
        }
    }

    @Test func aPrintDeletedWhileThePromptListensMatchesNoMore() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            try await bed.enroll(core, finger: .leftThumb)  // the first template the prompt offers
            try await core.recordPasswordSuccess(context())
            bed.reader.script(.matchOnRelease)
            let (running, client, _) = core.startEvaluate()
            #expect(await client.waitFor(.prompt))
            // alice deletes it herself (her right index finger stays), and her password since
            // leaves no enrollment change to ask about; the scan then matches that template.
            let deleted = await core.delete(
                user: "alice", fingers: [.leftThumb], all: false, password: bed.passwords.correctPassword,
                origin: Origin(), caller: .alice)
            #expect(deleted.isSuccess)
            try await core.recordPasswordSuccess(context())
            bed.reader.releaseScan()
            #expect(await running.value() == Refusal(.biometryNotEnrolled, reason: .noPrints, text: .notEnrolled))
        }
    }

    @Test func threeNoMatchesEndThePromptWithAuthenticationFailedMaxTries() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.noMatch, .noMatch, .noMatch, .match)
            let (running, client, _) = core.startEvaluate()

            #expect(
                await running.value()
                    == Refusal(.authenticationFailed, reason: .maxTries, text: .notRecognised(tries: 3)))
            #expect(client.texts(.noMatch) == [.noMatch(triesLeft: 2), .noMatch(triesLeft: 1)])
            #expect(bed.reader.verifications.count == 3)
            #expect(await core.state()?.consecutiveFailedMatches == 3)
        }
    }

    @Test func retryHintsAreRelayedAndAreNotFailedMatches() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(
                .retry(.tooShort), .noMatch, .retry(.centerFinger), .retry(.removeFinger), .noMatch, .noMatch)
            let (running, client, _) = core.startEvaluate()

            #expect(await running.value()?.reason == .maxTries)
            #expect(client.texts(.retry) == [.retry(.tooShort), .retry(.centerFinger), .retry(.removeFinger)])
            #expect(bed.reader.verifications.count == 3)
            #expect(await core.state()?.consecutiveFailedMatches == 3)
        }
    }

    @Test func theFifthConsecutiveFailureLocksOutAndIsOnDiskBeforeTheReply() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let events = await core.collectEvents()
            bed.reader.script(.noMatch, .noMatch, .noMatch)
            #expect(await core.startEvaluate().0.value()?.reason == .maxTries)
            #expect(try bed.stateOnDisk("alice")?.consecutiveFailedMatches == 3)

            // Across prompts: the second failure of the next one is the fifth in a row.
            bed.reader.script(.noMatch, .noMatch, .match)
            #expect(await core.startEvaluate().0.value() == lockoutRefusal)
            let onDisk = try #require(try bed.stateOnDisk("alice"))
            #expect(onDisk.consecutiveFailedMatches == 5)
            #expect(onDisk.biometryLockedOut)
            #expect(TouchGateCoreTests.events(events.all, "lockout").count == 1)

            // Locked out: the next prompt is refused before the reader is touched.
            #expect(await core.startEvaluate().0.value() == lockoutRefusal)
            #expect(bed.reader.verifications.count == 5)
        }
    }

    @Test func aFailedMatchThatCannotBeRecordedIsNotReportedAsAMereFailure() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            await core.states.flush()
            // The user's state directory is gone and a file stands in its place: no write can land.
            let users = "\(bed.statePath)/users"
            #expect(rename("\(users)/alice", "\(users)/alice.moved") == 0)
            try plantFile("\(users)/alice", "in the way")
            bed.reader.script(.noMatch)

            #expect(
                await core.startEvaluate().0.value() == Refusal(.internalError, reason: .storage, text: .internalError)
            )
        }
    }

    @Test func aMatchResetsTheFailureCount() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.noMatch, .noMatch, .noMatch, .noMatch, .match)
            #expect(await core.startEvaluate().0.value()?.reason == .maxTries)
            #expect(await core.startEvaluate().0.value() == .success(.recognised))
            #expect(await core.state()?.consecutiveFailedMatches == 0)
            await core.states.flush()
            #expect(try bed.stateOnDisk("alice")?.consecutiveFailedMatches == 0)

            // Four more in a row are still short of the five that lock.
            bed.reader.script(.noMatch, .noMatch, .noMatch, .noMatch)
            #expect(await core.startEvaluate().0.value()?.reason == .maxTries)
            #expect(await core.startEvaluate().0.value()?.reason == .readerError)  // unscripted: not counted
            #expect(await core.preflight() == nil)
        }
    }

    @Test func aCancelEndsThePromptWithAppCancelAndFreesTheReader() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let events = await core.collectEvents()
            bed.reader.script(.hold)
            let (running, client, input) = core.startEvaluate()
            #expect(await client.waitFor(.prompt))

            input.deliver(.cancel)
            #expect(await running.value() == Refusal(.appCancel, reason: .cancelled, text: .cancelled))
            #expect(await loopUntil(.max, limit: .seconds(10)) { bed.reader.cancellations == 1 })
            #expect(core.runningPrompts == 0)
            #expect(!core.queue.isBusy)
            let outcome = try #require(TouchGateCoreTests.events(events.all, "outcome").last)
            #expect(outcome.contains(#""outcome":"appCancel""#))
            // Cancels do not count toward lockout.
            #expect(await core.state()?.consecutiveFailedMatches == 0)
        }
    }

    @Test func aClientThatGoesAwayIsPublishedAsAppCancelAndLeavesTheQueueAtOnce() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let events = await core.collectEvents()
            bed.reader.script(.hold, .match)
            let (holder, holderClient, _) = core.startEvaluate()
            #expect(await holderClient.waitFor(.prompt))
            let (leaver, leaverClient, _) = core.startEvaluate()
            let (waiter, waiterClient, _) = core.startEvaluate()
            #expect(await waiterClient.waitFor(.queued))
            #expect(await leaverClient.waitFor(.queued))

            // A queued client goes: it is out at once, while the reader is still held.
            leaver.cancel()
            #expect(await leaver.value() == Refusal(.appCancel, reason: .clientGone, text: .cancelled))
            #expect(!holder.isFinished)
            #expect(TouchGateCoreTests.events(events.all, "outcome").last?.contains(#""reason":"clientGone""#) == true)

            // The holder's client goes: its scan is cancelled and the next in line gets the reader.
            holder.cancel()
            #expect(await holder.value()?.reason == .clientGone)
            #expect(await waiter.value() == .success(.recognised))
            #expect(waiterClient.kinds() == [.queued, .prompt])
            #expect(!leaverClient.kinds().contains(.prompt))
            #expect(bed.reader.verifications.count == 2)
            #expect(await loopUntil(.max, limit: .seconds(10)) { bed.reader.cancellations == 1 })
        }
    }

    @Test func shutdownEndsEveryPromptWithSystemCancelAndRefusesNewOnes() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.hold, .match)
            let (holder, holderClient, _) = core.startEvaluate()
            #expect(await holderClient.waitFor(.prompt))
            let (waiter, waiterClient, _) = core.startEvaluate()
            #expect(await waiterClient.waitFor(.queued))

            core.beginShutdown()
            let shutdown = Refusal(.systemCancel, reason: .shutdown, text: .shuttingDown)
            #expect(await holder.value() == shutdown)
            #expect(await waiter.value() == shutdown)
            let (late, lateClient, _) = core.startEvaluate()
            #expect(await late.value() == shutdown)
            #expect(!lateClient.kinds().contains(.prompt))
            #expect(bed.reader.verifications.count == 1)

            #expect(core.runningPrompts == 0)
            #expect(await within { await core.finishShutdown() } != nil)
            #expect(bed.reader.closes == 1)
        }
    }

    @Test(arguments: [
        (ReaderFailure.removed, Refusal(.biometryNotAvailable, reason: .removed, text: .readerRemoved)),
        (.tooHot, Refusal(.biometryNotAvailable, reason: .tooHot, text: .readerTooHot)),
        (.noReader, Refusal(.biometryNotAvailable, reason: .noReader, text: .noReader)),
        (.busy, Refusal(.biometryNotAvailable, reason: .busy, text: .readerBusy)),
        (.timedOut, Refusal(.timeout, reason: .timeout, text: .timedOut(seconds: 30))),
        (.invalidTemplate, Refusal(.biometryNotAvailable, reason: .readerError, text: .internalError)),
        (.printsNotFound, Refusal(.biometryNotAvailable, reason: .readerError, text: .internalError)),
    ])
    func aReaderFailureEndsThePromptAtOnceAndSaysWhy(_ failure: ReaderFailure, _ expected: Refusal) async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.fail(failure), .match)
            #expect(await core.startEvaluate().0.value() == expected)
            #expect(bed.reader.verifications.count == 1)
            #expect(await core.state()?.consecutiveFailedMatches == 0)
        }
    }

    @Test func theClientsLimitsMayOnlyTightenTheDaemons() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.noMatch, .noMatch, .noMatch, .noMatch, .fail(.timedOut))
            var tight = core.evaluateRequest()
            tight.maxTries = 1
            let one = await within {
                await core.evaluate(tight, caller: .root, client: CollectingClient(), input: PromptInput())
            }
            #expect(one == Refusal(.authenticationFailed, reason: .maxTries, text: .notRecognised(tries: 1)))

            var loose = core.evaluateRequest()
            loose.maxTries = 50
            loose.timeoutSeconds = 3600
            let three = await within {
                await core.evaluate(loose, caller: .root, client: CollectingClient(), input: PromptInput())
            }
            #expect(three?.text == .notRecognised(tries: 3))

            var quick = core.evaluateRequest()
            quick.timeoutSeconds = 5
            let timedOut = await within {
                await core.evaluate(quick, caller: .root, client: CollectingClient(), input: PromptInput())
            }
            #expect(timedOut == Refusal(.timeout, reason: .timeout, text: .timedOut(seconds: 5)))
        }
    }

    /// An untimed prompt (fprintd's VerifyStart) gives the reader no deadline, whatever the request
    /// or the daemon's `timeout` say; a timed one gives the daemon's, or a lower one asked for.
    @Test func anUntimedPromptGivesTheReaderNoDeadline() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.match, .match, .match)
            var untimed = core.evaluateRequest()
            untimed.untimed = true
            untimed.timeoutSeconds = 5
            var quick = core.evaluateRequest()
            quick.timeoutSeconds = 5
            for request in [untimed, core.evaluateRequest(), quick] {
                let reply = await within {
                    await core.evaluate(request, caller: .root, client: CollectingClient(), input: PromptInput())
                }
                #expect(reply?.isSuccess == true)
            }
            #expect(bed.reader.verifyTimeouts == [nil, Int(core.config.timeout), 5])
        }
    }
}
