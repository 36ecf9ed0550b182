/*
 * The pod sandbox's "pause" process: it holds the pod's namespaces open and does nothing
 * else. As PID 1 of the sandbox it must reap zombies (orphans are re-parented to it) and
 * exit cleanly on SIGINT/SIGTERM so that stopping a sandbox is quick.
 * Built statically by e2e/kind/build-images.sh (gcc -static); written for Tessera.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) { (void)sig; _exit(0); }

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {}
}

int main(void) {
  struct sigaction stop = {.sa_handler = on_stop};
  struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
      sigaction(SIGCHLD, &child, NULL) < 0)
    return 1;
  for (;;) pause();
}
