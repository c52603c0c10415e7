#include "host_waits.h"

#include <sys/epoll.h>

int host_epoll_on(int fd) {
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) return -1;
    struct epoll_event event = {.events = EPOLLIN, .data = {.fd = fd}};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) == 0 ? epfd : -1;
}

int host_epoll_wait(int epfd, int timeout_ms) {
    struct epoll_event ready;
    return epoll_wait(epfd, &ready, 1, timeout_ms);
}
