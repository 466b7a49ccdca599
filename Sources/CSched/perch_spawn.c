#define _GNU_SOURCE
#include "perch_sched.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

extern char **environ;

int perch_spawn(int *pid, const char *program, char *const argv[], char *const envp[], const char *directory,
                int in, int out, int err) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int status = posix_spawn_file_actions_init(&actions);
    if (status != 0) return status;
    status = posix_spawnattr_init(&attributes);
    if (status != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return status;
    }
    const int sources[3] = {in, out, err};
    for (int target = 0; target < 3 && status == 0; target++) {
        // dup2 onto itself would leave close-on-exec set: glibc clears it for this case.
        status = posix_spawn_file_actions_adddup2(&actions, sources[target], target);
    }
    // Nothing but 0, 1 and 2 reaches the child, whatever the process has open or opens meanwhile.
    if (status == 0) status = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    if (status == 0 && directory != NULL) status = posix_spawn_file_actions_addchdir_np(&actions, directory);
    sigset_t defaults, none;
    sigfillset(&defaults);
    sigemptyset(&none);
    if (status == 0) status = posix_spawnattr_setsigdefault(&attributes, &defaults);
    if (status == 0) status = posix_spawnattr_setsigmask(&attributes, &none);
    if (status == 0) status = posix_spawnattr_setpgroup(&attributes, 0);
    if (status == 0) {
        status = posix_spawnattr_setflags(
            &attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
    }
    if (status == 0) {
        pid_t child = 0;
        status = posix_spawnp(&child, program, &actions, &attributes, argv, envp != NULL ? envp : environ);
        if (status == 0) *pid = child;
    }
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return status;
}
