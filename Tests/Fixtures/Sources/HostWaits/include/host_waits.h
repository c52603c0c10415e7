#ifndef HOST_WAITS_H
#define HOST_WAITS_H
/* epoll for SamplerHost (Swift's Glibc module does not export it). */
/* An epoll instance watching `fd` for input; -1 with errno on failure. */
int host_epoll_on(int fd);
/* epoll_wait for one event; its result, errno as it left it. */
int host_epoll_wait(int epfd, int timeout_ms);
#endif
