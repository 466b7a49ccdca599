import Foundation
import PerchChat
import PerchLock

#if canImport(Glibc)
    import Glibc
#endif

extension ExternalPlugin {
    /// Starts the child and initializes it, and watches the plugin's files (``watchFiles()``). A
    /// child that cannot start, or does not answer, is logged, not thrown: the supervisor tries
    /// again at the next event, as after a crash. A plugin that answers `initialize` with an error
    /// refused to start: its child is ended and the error thrown.
    func start(_ environment: PluginEnvironment) async throws {
        self.environment.withLock { $0 = environment }
        state.withLock { state in
            state.stopped = false
            state.notBefore = nil
        }
        do {
            _ = try await running()
        } catch let failure as PluginFailure where failure.isAnswer {
            await stop()
            throw failure
        } catch {
            logger?.warning("plugin \(pluginName) did not start: \(error); tried again at its next event")
        }
        let watcher = Task { [weak self] in _ = await self?.watchFiles() }
        state.withLock { $0.watcher = watcher }
    }

    /// Stops watching, and ends the child (``endChild()``); no child starts again after it.
    func stop() async {
        let watcher = state.withLock { state -> Task<Void, Never>? in
            state.stopped = true
            defer { state.watcher = nil }
            return state.watcher
        }
        watcher?.cancel()
        await endChild()
    }

    /// A new child in place of the running one (its file changed, or `perch plugin restart`):
    /// the old one is told to stop and ended, the new one started and initialized.
    ///
    /// The running child is set aside first, so the requests that come meanwhile go to the new one;
    /// those in flight on the old one are still answered by it while it stops.
    func restart(reason: String) async {
        logger?.info("plugin \(pluginName): \(reason); restarting it")
        metrics?.increment("perch_plugin_restarts_total", ["plugin": pluginName])
        let old = state.withLock { state -> (ChildProcess, PluginInput)? in
            defer {
                state.process = nil
                state.input = nil
                state.ready = false
                state.notBefore = nil
            }
            guard let process = state.process, let input = state.input else { return nil }
            return (process, input)
        }
        do {
            _ = try await running()
        } catch {
            logger?.warning("plugin \(pluginName) did not start again: \(error)")
        }
        if let (process, input) = old { await retire(process, input) }
    }

    /// Ends a child set aside: `stop` (its answer is not awaited), up to 2 s to exit on its own,
    /// then its stdin closed, 1 s more, then SIGTERM and SIGKILL.
    private func retire(_ process: ChildProcess, _ input: PluginInput) async {
        // An id of the host's own with nobody waiting on it: the answer, when it comes, is dropped.
        let id = state.withLock { state -> Int in
            state.nextId += 1
            return state.nextId
        }
        var writer = JSONWriter()
        writer.raw("{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"stop\",\"params\":")
        writer.value(.object(["plugin": .string(pluginName)]))
        writer.raw("}\n")
        _ = input.write(Data(writer.output.utf8))
        func exited(within time: Duration) async -> Bool {
            let deadline = ContinuousClock.now + time
            while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
            return !process.isRunning
        }
        if await exited(within: .seconds(2)) { return }
        input.close()
        if await exited(within: .seconds(1)) { return }
        process.terminate()
        if await exited(within: .milliseconds(500)) { return }
        process.terminate(SIGKILL)
    }

    /// Sends `stop` and waits up to 2 s for its answer (an error answer, from a plugin that has no
    /// stop of its own, counts as one), closes the child's stdin and gives it 1 s to exit on its
    /// own, then ends it (``dropChild()``).
    func endChild() async {
        let process = state.withLock { $0.process?.isRunning == true ? $0.process : nil }
        if let process {
            _ = try? await request(
                "stop", params: .object(["plugin": .string(pluginName)]), timeout: .seconds(2), restartsOnTimeout: false
            )
            state.withLock { $0.input }?.close()
            let deadline = ContinuousClock.now + .seconds(1)
            while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        }
        dropChild()
    }

    /// The files the plugin is made of, as its command names them: each word of `exec` that is a
    /// path to a regular file (from the working directory), the program itself when it is one
    /// (`./plugin`), the script an interpreter runs (`python3 karma.py`).
    var files: [String] {
        command.compactMap { word in
            guard !word.isEmpty, !word.hasPrefix("-") else { return nil }
            let path =
                word.hasPrefix("/") ? word : (workingDirectory ?? FileManager.default.currentDirectoryPath) + "/" + word
            var info = stat()
            guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
            return path
        }
    }

    /// Every second, until cancelled: when one of ``files`` changed (its size, its modification
    /// time or its inode: an editor that writes a new file and renames it over the old), the
    /// plugin restarts, so an author's edit is running a second later.
    func watchFiles() async {
        func signature(_ path: String) -> [Int] {
            var info = stat()
            guard stat(path, &info) == 0 else { return [] }
            return [Int(info.st_size), Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec), Int(info.st_ino)]
        }
        let watched = files
        guard !watched.isEmpty else { return }
        var known = watched.map(signature)
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            guard !Task.isCancelled else { return }
            let now = watched.map(signature)
            guard let changed = zip(watched, zip(known, now)).first(where: { $0.1.0 != $0.1.1 })?.0 else { continue }
            known = now
            await restart(reason: "\((changed as NSString).lastPathComponent) changed")
        }
    }
}
