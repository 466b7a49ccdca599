#ifndef PERCH_SCHED_H
#define PERCH_SCHED_H

/// The CPUs the calling thread may run on (`sched_getaffinity`), written to `cpus` in increasing
/// order, at most `capacity` of them. Returns how many, or -1 with `errno` set.
int perch_thread_cpus(int *cpus, int capacity);

/// Lets the calling thread run on the `count` CPUs of `cpus` only (`sched_setaffinity`).
/// Returns 0, or -1 with `errno` set (a CPU out of range is EINVAL).
int perch_pin_thread(const int *cpus, int count);

/// A non-blocking, close-on-exec eventfd (which Swift's Glibc module does not declare). Returns the
/// descriptor, or -1 with `errno` set.
int perch_eventfd(void);

/// How many CPUs the process may run on (its main thread's `sched_getaffinity`), or -1 with
/// `errno` set.
int perch_process_cpu_count(void);

/// Tells the CPU the caller is spinning (x86's `pause`, ARM's `yield`): the other hyperthread of
/// its core gets the execution units meanwhile, and the loop does not flood the memory bus.
void perch_cpu_relax(void);

/// Renames `from` to `to` unless `to` exists (`renameat2` with RENAME_NOREPLACE, which Swift's Glibc
/// module does not declare): an existing `to`, even an empty directory, is never replaced. Returns
/// 0, or -1 with `errno` set (EEXIST when `to` exists).
int perch_rename_no_replace(const char *from, const char *to);

/// Makes standard output line-buffered (a log read through a pipe sees each line as it is
/// written), and ignores SIGPIPE (a write to a closed socket or pipe fails with EPIPE instead of
/// ending the process): what a command-line entry point sets up first.
void perch_set_up_process_output(void);

/// Catches each of the `count` signals of `signals` with a handler that writes the signal's number,
/// one byte, to a pipe, and returns the pipe's read end (close-on-exec; -1 with `errno` set, EBUSY
/// when called before). Unlike a signal ignored until libdispatch has set up a signal source, a
/// signal caught so is not lost: it is on the pipe from the moment this returns, whichever thread
/// took it. (A caught signal is reset to its default in a program the process starts.)
int perch_signal_pipe(const int *signals, int count);

/// Starts `program` (looked up in PATH when it has no slash) with `argv` and `envp` (NULL: this
/// process's environment), in `directory` (NULL: this one's), its standard input, output and error
/// the descriptors `in`, `out` and `err`, and no other descriptor of this process (whatever is
/// open, close-on-exec or not); every signal at its default and none blocked (an ignored SIGPIPE
/// stays ignored across exec otherwise); in a process group of its own. Writes the child's id to
/// `pid`. Returns 0, or an `errno` value (the program not found, say). Unlike Foundation's
/// `Process`, it lists no descriptors: that list read past its buffer once about 1,365 were open.
int perch_spawn(int *pid, const char *program, char *const argv[], char *const envp[], const char *directory,
                int in, int out, int err);

#endif
