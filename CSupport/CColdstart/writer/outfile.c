// Where the timeline goes (security.md): the destination chosen and its
// directory opened at start-up, a new owner-only temporary file with an
// unpredictable name, and a rename that never replaces a newer timeline.
// Async-signal-safe system calls only.
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>   // renameat
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// ---- the destination ----

static const char *errno_text(int e) {
    switch (e) {
    case EACCES: return "permission denied";
    case ENOENT: return "no such directory";
    case EROFS: return "read-only file system";
    case ENOTDIR: return "not a directory";
    default: return "not writable";
    }
}

bool cs_out_choose(const char *value, const char *dir_env) {
    char dir[PATH_MAX] = "";
    char cwd[PATH_MAX];
    bool has_cwd = cs_syscall(SYS_getcwd, cwd, sizeof cwd) > 0;
    size_t vlen = strlen(value);
    bool is_path = vlen > 5 && strcmp(value + vlen - 5, ".json") == 0;

    if (strcmp(value, "1") == 0) {
        const char *base = (dir_env && *dir_env) ? dir_env : NULL;
        if (base && base[0] == '/') cs_append(dir, sizeof dir, base);
        else {
            // Relative to the start-up directory: the host may chdir later.
            if (!has_cwd) { cs_warn("cannot read the current directory; profiling off", NULL); return false; }
            cs_append(dir, sizeof dir, cwd);
            if (base) { cs_append(dir, sizeof dir, "/"); cs_append(dir, sizeof dir, base); }
        }
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        const char *name = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
        char pid[24];
        cs_format_u64((uint64_t)cs_g.proc.pid, pid);
        bool ok = cs_append(cs_g.out.dest, sizeof cs_g.out.dest, dir)
            && cs_append(cs_g.out.dest, sizeof cs_g.out.dest, "/coldstart-")
            && cs_append(cs_g.out.dest, sizeof cs_g.out.dest, *name ? name : "app")
            && cs_append(cs_g.out.dest, sizeof cs_g.out.dest, "-")
            && cs_append(cs_g.out.dest, sizeof cs_g.out.dest, pid)
            && cs_append(cs_g.out.dest, sizeof cs_g.out.dest, ".json");
        if (!ok) { cs_warn("timeline path too long; profiling off", NULL); return false; }
    } else if (is_path) {
        if (value[0] != '/') {
            if (!has_cwd) { cs_warn("cannot read the current directory; profiling off", NULL); return false; }
            cs_append(cs_g.out.dest, sizeof cs_g.out.dest, cwd);
            cs_append(cs_g.out.dest, sizeof cs_g.out.dest, "/");
        }
        if (!cs_append(cs_g.out.dest, sizeof cs_g.out.dest, value)) {
            cs_warn("timeline path too long; profiling off", NULL);
            return false;
        }
        memcpy(dir, cs_g.out.dest, sizeof dir);
        *strrchr(dir, '/') = 0;
        if (dir[0] == 0) cs_append(dir, sizeof dir, "/");
    } else {
        cs_warn("COLDSTART must be 0, 1 or a path ending in .json; profiling off. Got: ", value);
        return false;
    }

    // The directory is opened now and the file later created in it by
    // descriptor: a directory (or a symlink on its path) swapped in the
    // meantime cannot redirect the write.
    int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (dirfd < 0 || fstat(dirfd, &st) != 0 || cs_syscall(SYS_faccessat, AT_FDCWD, dir, W_OK | X_OK, 0) != 0) {
        int e = errno;
        if (dirfd >= 0) close(dirfd);
        errno = e;
        char why[PATH_MAX + 64] = "";
        cs_append(why, sizeof why, dir);
        cs_append(why, sizeof why, " (");
        cs_append(why, sizeof why, errno_text(errno));
        cs_append(why, sizeof why, "); profiling off");
        cs_warn("cannot write the timeline to ", why);
        return false;
    }
    // Before main, on the only thread: the descriptor is the directory.
    cs_g.out.dirfd = cs_fd_high(dirfd, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
    cs_g.out.dir_dev = (uint64_t)st.st_dev;
    cs_g.out.dir_ino = (uint64_t)st.st_ino;
    cs_append(cs_g.out.dir, sizeof cs_g.out.dir, dir);
    const char *base = strrchr(cs_g.out.dest, '/') + 1;
    if (!cs_append(cs_g.out.base, sizeof cs_g.out.base - 16, base)) {
        cs_warn("timeline file name too long; profiling off", NULL);
        close(cs_g.out.dirfd);
        return false;
    }
    return true;
}

// ---- the write ----

// The directory opened at start-up, if the descriptor still is that directory
// (a host that closes every descriptor may have reused the number); else the
// directory reopened by path, if it is the very same one (same device and
// inode: a directory or symlink swapped in since cannot redirect the write).
// -1 if neither; *opened says the caller closes it.
static bool is_timeline_dir(int fd) {
    struct stat st;
    return fd > 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == cs_g.out.dir_dev && (uint64_t)st.st_ino == cs_g.out.dir_ino;
}

int cs_out_dir(bool *opened) {
    *opened = false;
    int fd = cs_g.out.dirfd;
    if (is_timeline_dir(fd)) return fd;
    fd = open(cs_g.out.dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (is_timeline_dir(fd)) {
        *opened = true;
        return fd;
    }
    if (fd >= 0) close(fd);
    return -1;
}

// "<base>.tmp.<pid>.<16 random hex digits>" into `name`; false if it does not fit.
static bool temp_name(char *name, size_t cap) {
    static const char hex[] = "0123456789abcdef";
    uint64_t r = 0;
    if (cs_syscall(SYS_getrandom, &r, sizeof r, GRND_NONBLOCK) != (long)sizeof r)
        r = cs_monotonic_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)name;
    size_t n = strlen(cs_g.out.base);
    if (n + 64 > cap) return false;
    memcpy(name, cs_g.out.base, n);
    memcpy(name + n, ".tmp.", 5);
    n += 5;
    n += cs_format_u64((uint64_t)cs_g.proc.pid, name + n);
    name[n++] = '.';
    for (int i = 0; i < 16; i++) name[n++] = hex[(r >> (4 * i)) & 15];
    name[n] = 0;
    return true;
}

// Creates "<base>.tmp.<pid>.<16 random hex digits>" in `dir`: a new file
// (O_EXCL, O_NOFOLLOW: a file or symlink planted under that name is never
// opened), readable by its owner only.
int cs_out_create_temp(int dir, char *name, size_t cap) {
    for (int attempt = 0; attempt < 4; attempt++) {
        if (!temp_name(name, cap)) return -1;
        int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

// ---- an unnamed file made during the launch ----
//
// Creating the file (an inode and a directory entry on ext4) took ~40–55 µs
// of a short launch's exit. So once main runs, the scan thread makes the
// timeline's file ahead: an O_TMPFILE in the timeline's directory (mode 0600,
// no name, so a process killed before its end leaves nothing behind), which
// the writer fills and then links into place. Where O_TMPFILE is not
// supported (NFS, old kernels) the writer creates a temporary file as before.
// cs_g.out.early: 0 nothing yet, 1 being made, 2 made, 3 taken or given up.

#define CS_EARLY_MAKING 1
#define CS_EARLY_READY 2
#define CS_EARLY_CLOSED 3

void cs_out_prepare(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&cs_g.out.early, &expected, CS_EARLY_MAKING)) return;
    bool opened;
    int dir = cs_out_dir(&opened);
    int fd = dir >= 0 ? openat(dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600) : -1;
    if (opened) close(dir);
    // A file without a name: ours if it has no link (a host's file in its
    // place has a name). Not its device against the directory's: overlayfs
    // (a container's root) whose layers sit on different file systems gives
    // a file its layer's device and a directory the overlay's (one file
    // system: the overlay's for both, checked on Linux 6.18).
    uint64_t dev = 0, ino = 0;
    struct stat st;
    if (fd >= 0)
        fd = fstat(fd, &st) == 0 && st.st_nlink == 0 ? cs_fd_high(fd, dev = (uint64_t)st.st_dev, ino = (uint64_t)st.st_ino) : -1;
    if (fd >= 0) {
        cs_g.out.early_fd = fd;
        cs_g.out.early_dev = dev;
        cs_g.out.early_ino = ino;
        cs_g.out.early_euid = geteuid();
    }
    expected = CS_EARLY_MAKING;
    // The writer came first (it then made its own file): this one goes.
    if (!atomic_compare_exchange_strong(&cs_g.out.early, &expected, fd >= 0 ? CS_EARLY_READY : CS_EARLY_CLOSED) && fd >= 0)
        close(fd);
}

int cs_out_take_prepared(void) {
    if (atomic_exchange(&cs_g.out.early, CS_EARLY_CLOSED) != CS_EARLY_READY) return -1;
    int fd = cs_g.out.early_fd;
    struct stat st;
    // A host that closes every descriptor may have reused the number: then
    // it is the host's, neither written nor closed.
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != cs_g.out.early_dev || (uint64_t)st.st_ino != cs_g.out.early_ino
        || st.st_nlink != 0)
        return -1;
    // A daemon that dropped root since (setuid): the new user cannot link a
    // file root opened (linkat with AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH,
    // or on Linux 6.10+ the opener's credentials; /proc/self/fd is closed to
    // a process that changed its user). A temporary file of the new user's
    // then, where it may write.
    if (geteuid() != cs_g.out.early_euid) {
        close(fd);
        return -1;
    }
    return fd;
}

// Gives the timeline `name` in `dir` if nothing is there: renames the
// temporary file `tmp`, or links the unnamed file `fd` (linkat never
// replaces, nor follows a symlink at `name`). 0, or -1 with errno.
static int place_new(int dir, const char *tmp, int fd, const char *name) {
    if (fd < 0) return (int)cs_syscall(SYS_renameat2, dir, tmp, dir, name, RENAME_NOREPLACE);
    // The descriptor itself (Linux 6.10 on, for the credentials that opened
    // it): without the walk through /proc, 3–5 µs less of the host's exit.
    // Older kernels say ENOENT unless the caller has CAP_DAC_READ_SEARCH.
    int rc = linkat(fd, "", dir, name, AT_EMPTY_PATH);
    if (rc == 0 || errno != ENOENT) return rc;
    char path[32] = "/proc/self/fd/";
    cs_format_u64((uint64_t)fd, path + 14);
    return linkat(AT_FDCWD, path, dir, name, AT_SYMLINK_FOLLOW);
}

// Gives the timeline `name` in `dir`, replacing what is there: the unnamed
// file is linked under a temporary name first, then renamed over it.
static int place_over(int dir, const char *tmp, int fd, const char *name) {
    if (fd < 0) return renameat(dir, tmp, dir, name);
    char t[sizeof cs_g.out.base + 64];
    for (int attempt = 0; attempt < 4; attempt++) {
        if (!temp_name(t, sizeof t)) return -1;
        if (place_new(dir, NULL, fd, t) != 0) {
            if (errno == EEXIST) continue;
            return -1;
        }
        if (renameat(dir, t, dir, name) == 0) return 0;
        unlinkat(dir, t, 0);
        return -1;
    }
    return -1;
}

// Whether the timeline `base` in `dir` was written by this very process:
// the "pid" of its first lines (otherData's) is ours.
static bool written_by_this_process(int dir, const char *base) {
    int fd = openat(dir, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    static const char key[] = "\"pid\":";
    for (ssize_t i = 0; n > 0 && i + (ssize_t)sizeof key - 1 < n; i++) {
        if (memcmp(buf + i, key, sizeof key - 1) != 0) continue;
        uint64_t pid;
        const char *end = cs_scan_dec(buf + i + sizeof key - 1, buf + n, &pid);
        return end && end < buf + n && pid == (uint64_t)cs_g.proc.pid;
    }
    return false;
}

void cs_out_remove_previous(uint64_t start_rt_us) {
    struct stat st;
    bool opened;
    int dir = start_rt_us ? cs_out_dir(&opened) : -1;
    if (dir < 0) return;
    if (fstatat(dir, cs_g.out.base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)
        && (uint64_t)st.st_mtim.tv_sec * 1000000ull + (uint64_t)st.st_mtim.tv_nsec / 1000 < start_rt_us)
        unlinkat(dir, cs_g.out.base, 0);
    if (opened) close(dir);
}

// Puts the timeline in place under its name: the temporary file `tmp`, or
// the unnamed file `fd` (then `tmp` is NULL). A file already there is kept,
// and this timeline becomes "<stem>-2.json" (then -3, …), when it belongs to
// an earlier image of this process (an exec of itself after ready(): same
// pid, written since the process started) or to another process given the
// same path (written after this process can have started: `start_rt_us` is
// the earliest it can have, `latest_start_rt_us` the latest; a start known to
// a clock tick or estimated spans milliseconds, and the previous run of a
// loop writes its file just before it). An older file (a previous run's) is
// replaced, as a rerun expects, and so is anything that is not a regular file.
int cs_out_publish(int dir, const char *tmp, int fd, uint64_t start_rt_us, uint64_t latest_start_rt_us) {
    const char *base = cs_g.out.base;
    // A free name (the usual case: a rerun's file went during the launch)
    // takes one system call, with no look first (~6 µs of the exit here).
    if (place_new(dir, tmp, fd, base) == 0) return 0;
    bool no_noreplace = errno == EINVAL && fd < 0;   // no RENAME_NOREPLACE here
    if (!no_noreplace && errno != EEXIST) return -1;
    struct stat st;
    if (fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        // Never there, or gone since.
        return no_noreplace ? renameat(dir, tmp, dir, base) : place_new(dir, tmp, fd, base);
    } else {
        uint64_t mtime_us = (uint64_t)st.st_mtim.tv_sec * 1000000ull + (uint64_t)st.st_mtim.tv_nsec / 1000;
        // Only a regular file can be a timeline: anything else there (a
        // planted symlink) is replaced, never followed or kept.
        bool keep = S_ISREG(st.st_mode) && start_rt_us != 0
            && (mtime_us >= latest_start_rt_us || (mtime_us >= start_rt_us && written_by_this_process(dir, base)));
        if (!keep) return place_over(dir, tmp, fd, base);
    }
    size_t stem = strlen(base) - 5;   // without ".json"
    char name[sizeof cs_g.out.base + 8];
    for (uint64_t k = 2; k < 100; k++) {
        memcpy(name, base, stem);
        name[stem] = '-';
        size_t n = stem + 1 + cs_format_u64(k, name + stem + 1);
        memcpy(name + n, ".json", 6);
        if (place_new(dir, tmp, fd, name) == 0) {
            // Say where it went (cs_g.out.dest is the message's path).
            char *slash = strrchr(cs_g.out.dest, '/');
            if (slash && (size_t)(slash + 1 - cs_g.out.dest) + strlen(name) < sizeof cs_g.out.dest) strcpy(slash + 1, name);
            return 0;
        }
        if (errno != EEXIST) return -1;
    }
    return -1;
}


void cs_out_close_dir(void) {
    if (is_timeline_dir(cs_g.out.dirfd)) close(cs_g.out.dirfd);
    cs_g.out.dirfd = -1;
}

// A name Coldstart gives a timeline in a directory: "coldstart-<executable>-
// <pid>.json" or "…-<pid>-<n>.json". Temporary files and anything else are
// never rotated.
static bool is_rotated_name(const char *name) {
    size_t n = strlen(name);
    if (n < 16 || strncmp(name, "coldstart-", 10) != 0 || strcmp(name + n - 5, ".json") != 0) return false;
    if (strstr(name, ".tmp.")) return false;
    size_t i = n - 5, groups = 0;
    while (groups < 2) {
        size_t digits = 0;
        while (i > 10 && name[i - 1] >= '0' && name[i - 1] <= '9') { i--; digits++; }
        if (digits == 0 || i <= 10 || name[i - 1] != '-') return groups > 0;
        i--;
        groups++;
    }
    return true;
}

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

// One pass over the directory: how many timelines of ours, their bytes, and
// the CS_ROTATE_BATCH oldest of them other than `mine`, oldest first, in
// cs_g.out.oldest (their number returned).
static size_t survey(int fd, const char *mine, uint64_t *count, uint64_t *bytes) {
    struct cs_rotate_entry *old = cs_g.out.oldest;
    size_t n = 0;
    *count = *bytes = 0;
    uid_t me = geteuid();
    if (lseek(fd, 0, SEEK_SET) != 0) return 0;
    for (;;) {
        long got = cs_syscall(SYS_getdents64, fd, cs_g.out.dents, sizeof cs_g.out.dents);
        if (got <= 0) return n;
        for (long off = 0; off < got;) {
            const struct linux_dirent64 *d = (const void *)(cs_g.out.dents + off);
            off += d->d_reclen;
            struct stat st;
            // Only regular files of ours: a symlink is never followed or counted.
            if (!is_rotated_name(d->d_name) || fstatat(fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
            if (!S_ISREG(st.st_mode) || st.st_uid != me) continue;
            (*count)++;
            *bytes += (uint64_t)st.st_size;
            if (strcmp(d->d_name, mine) == 0 || strlen(d->d_name) >= sizeof old->name) continue;
            uint64_t t = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
            // Insertion into the sorted batch; the newest falls off a full one.
            size_t k = n < CS_ROTATE_BATCH ? n++ : CS_ROTATE_BATCH;
            while (k > 0 && old[k - 1].mtime_ns > t) {
                if (k < CS_ROTATE_BATCH) old[k] = old[k - 1];
                k--;
            }
            if (k < CS_ROTATE_BATCH) {
                old[k].mtime_ns = t;
                old[k].size = (uint64_t)st.st_size;
                strcpy(old[k].name, d->d_name);
            }
        }
    }
}

void cs_out_rotate(int dir) {
    uint64_t keep = cs_g.cfg.keep, keep_bytes = cs_g.cfg.keep_bytes;
    if (keep == 0 && keep_bytes == 0) return;
    int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    const char *slash = strrchr(cs_g.out.dest, '/');
    const char *mine = slash ? slash + 1 : cs_g.out.dest;
    // One listing per launch, whatever the directory holds; a backlog past
    // one batch drains over the next launches.
    uint64_t count, bytes;
    size_t n = survey(fd, mine, &count, &bytes);
    for (size_t i = 0; i < n; i++) {
        if ((keep == 0 || count <= keep) && (keep_bytes == 0 || bytes <= keep_bytes)) break;
        if (unlinkat(fd, cs_g.out.oldest[i].name, 0) != 0) continue;
        count--;
        bytes -= cs_g.out.oldest[i].size;
    }
    close(fd);
}
