import CSQLite
import Dispatch
import Foundation
import PerchLock

/// Copies the write-ahead log back into the database on its own thread and connection, so commits
/// rarely wait for a checkpoint's fsync. The writer's connection reports the log's size after
/// each commit (`sqlite3_wal_hook`); past `threshold` frames (4 MiB by default, SQLite's own
/// automatic checkpoint size) not yet copied back, this thread runs a PASSIVE checkpoint, which
/// never blocks the writer or readers. What counts is the frames written since the last checkpoint
/// copied, not the log's length: otherwise every commit would ask for another checkpoint (two
/// fsyncs) while readers hold the log.
///
/// SQLite starts the log over only when a write transaction begins with every frame copied back,
/// which a checkpoint on another thread never achieves under steady load (commits land while it
/// copies): the log grew without end (240 MB in 6,000 round trips), and each commit then extended
/// the file. So once the log is `restartFactor` thresholds long, the writer copies back the few
/// frames left itself, between two batches (`catchUpIfDue`), and its next transaction starts the
/// log over when no reader still reads from it; if one does, it tries again a quarter threshold
/// later. One last checkpoint runs at close.
final class Checkpointer: Sendable {
    private struct State {
        var closed = false
        var pending = false
        /// Frames of the current log already copied back by a checkpoint.
        var copied: Int32 = 0
        /// The log's length at the last commit; a shorter log means it was restarted.
        var frames: Int32 = 0
        /// The log's length when the last checkpoint was asked for: while a reader keeps old frames
        /// from being copied, the next one waits until the log has grown by a quarter threshold.
        var asked: Int32 = 0
        /// Counts restarts of the log, so a checkpoint that finishes after one does not count
        /// frames of the old log as copied.
        var generation = 0
        var checkpoints = 0
        /// The log's length when the writer last copied back the rest itself.
        var caughtUp: Int32 = 0
    }

    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let state = Lock(State())
    let threshold: Int32

    init(path: String, synchronous: SQLiteChatStore.Synchronous, threshold: Int32 = 2_000) throws {
        self.threshold = threshold
        let box = ConnectionBox(connection: try SQLiteConnection(path: path, readOnly: false))
        try box.connection.execute("PRAGMA synchronous = \(synchronous.rawValue)")
        try box.connection.execute("PRAGMA wal_autocheckpoint = 0")
        Thread.detachNewThread { [self] in
            nameCurrentThread("perch-checkpt")
            while true {
                wake.wait()
                let (closed, generation) = state.withLock { state in
                    state.pending = false
                    return (state.closed, state.generation)
                }
                var log: Int32 = 0
                var copied: Int32 = 0
                let status = sqlite3_wal_checkpoint_v2(
                    box.connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied)
                state.withLock { state in
                    state.checkpoints += 1
                    if status == SQLITE_OK && state.generation == generation {
                        state.copied = max(state.copied, copied)
                    }
                }
                if closed { break }
            }
            done.signal()
        }
    }

    /// Hooks the writer's connection: its commits tell this checkpointer how long the log is.
    func watch(_ connection: SQLiteConnection) {
        sqlite3_wal_hook(
            connection.handle,
            { context, _, _, frames in
                let checkpointer = Unmanaged<Checkpointer>.fromOpaque(context!).takeUnretainedValue()
                checkpointer.committed(frames: frames)
                return SQLITE_OK
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// A commit left the log `frames` long: asks for a checkpoint (once, however often asked before
    /// it runs) when `threshold` frames or more are not copied back yet.
    func committed(frames: Int32) {
        let wakeUp = state.withLock { state -> Bool in
            if frames < state.frames {
                state.generation += 1
                state.copied = 0
                state.asked = 0
                state.caughtUp = 0
            }
            state.frames = frames
            guard !state.closed, !state.pending, frames - state.copied >= threshold,
                frames - state.asked >= threshold / 4
            else { return false }
            state.pending = true
            state.asked = frames
            return true
        }
        if wakeUp { wake.signal() }
    }

    /// How many checkpoints have run (tests).
    var checkpoints: Int { state.withLock { $0.checkpoints } }

    /// How many times the log has started over (tests).
    var restarts: Int { state.withLock { $0.generation } }

    /// How long the log may grow, in thresholds, before the writer copies back the rest itself.
    static let restartFactor: Int32 = 4

    /// Run by the writer on its connection before a batch (outside a transaction): when the log is
    /// long, copies back what is left (a PASSIVE checkpoint: the writer's batch waits for it, a
    /// reader never does), so the batch's transaction can start the log over.
    func catchUpIfDue(_ connection: SQLiteConnection) {
        let due = state.withLock { state -> Int? in
            guard !state.closed, state.frames >= threshold * Self.restartFactor,
                state.frames - state.caughtUp >= threshold / 4
            else { return nil }
            state.caughtUp = state.frames
            return state.generation
        }
        guard let generation = due else { return }
        var log: Int32 = 0
        var copied: Int32 = 0
        let status = sqlite3_wal_checkpoint_v2(connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied)
        state.withLock { state in
            if status == SQLITE_OK && state.generation == generation { state.copied = max(state.copied, copied) }
        }
    }

    func close() {
        let first = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        wake.signal()
        done.wait()
    }
}

/// The poll tick's timer; Dispatch sources are thread-safe.
struct PollTimer: @unchecked Sendable {
    let source: DispatchSourceTimer
}
