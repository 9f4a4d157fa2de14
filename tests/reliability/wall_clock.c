/* A wall clock a test can step, like NTP steps a board without RTC: CLOCK_REALTIME (clock_gettime,
 * gettimeofday, time) moves by the offset in seconds read from $RF_CLOCK_OFFSET_FILE (re-read every
 * 50 ms); CLOCK_MONOTONIC and sleeping are untouched. LD_PRELOAD it into the daemon.
 * (libfaketime 0.9.10 with FAKETIME_DONT_FAKE_MONOTONIC=1 makes Python's time.sleep fail with EINVAL.) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static volatile double offset_s;
static volatile long long read_at_ns;

static void refresh(void) {
    struct timespec now;
    real_clock_gettime(CLOCK_MONOTONIC, &now);
    long long ns = (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
    if (read_at_ns != 0 && ns - read_at_ns < 50000000LL) return;
    read_at_ns = ns;
    const char *path = getenv("RF_CLOCK_OFFSET_FILE");
    if (path == NULL) return;
    FILE *f = fopen(path, "r");
    if (f == NULL) return;
    double value;
    if (fscanf(f, "%lf", &value) == 1) offset_s = value;
    fclose(f);
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    if (real_clock_gettime == NULL) real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
    int rc = real_clock_gettime(id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        refresh();
        long long whole = (long long)offset_s;
        long long nsec = ts->tv_nsec + (long long)((offset_s - (double)whole) * 1e9);
        long long sec = ts->tv_sec + whole + nsec / 1000000000LL;
        nsec %= 1000000000LL;
        if (nsec < 0) { nsec += 1000000000LL; sec -= 1; }
        ts->tv_sec = (time_t)sec;
        ts->tv_nsec = (long)nsec;
    }
    return rc;
}

int gettimeofday(struct timeval *tv, void *tz) {
    (void)tz;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (tv != NULL) { tv->tv_sec = ts.tv_sec; tv->tv_usec = ts.tv_nsec / 1000; }
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out != NULL) *out = ts.tv_sec;
    return ts.tv_sec;
}
