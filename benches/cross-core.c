// How long a cache line takes to go from one CPU to another and back: two threads, pinned to
// the first two CPUs this process may run on, hand one line back and forth. benches/dwarf.sh
// prints it before and after its rounds: a VM's two vCPUs may sit on one die (tens of ns) or
// on two (hundreds), from one minute to the next, and btfgen's walk, which hands each unit's
// DIEs from one thread to the other, takes longer in the second case than pahole does.
//
//     cc -O2 -pthread benches/cross-core.c -o cross-core && ./cross-core
//
// Prints the median of 5 measures in ns, or nothing (exit 1) with fewer than two CPUs.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TRIPS 100000

static _Atomic long line __attribute__((aligned(64)));
static int cpus[2];

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *answer(void *unused)
{
    (void)unused;
    pin(cpus[1]);
    for (long i = 0; i < TRIPS; i++) {
        while (atomic_load_explicit(&line, memory_order_acquire) != 2 * i + 1)
            ;
        atomic_store_explicit(&line, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

static double measure(void)
{
    struct timespec start, end;
    pthread_t other;
    atomic_store(&line, 0);
    pthread_create(&other, NULL, answer, NULL);
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long i = 0; i < TRIPS; i++) {
        atomic_store_explicit(&line, 2 * i + 1, memory_order_release);
        while (atomic_load_explicit(&line, memory_order_acquire) != 2 * i + 2)
            ;
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    pthread_join(other, NULL);
    return ((end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec)) / TRIPS;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    cpu_set_t allowed;
    int found = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return 1;
    for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++)
        if (CPU_ISSET(cpu, &allowed))
            cpus[found++] = cpu;
    if (found < 2)
        return 1;
    pin(cpus[0]);
    double ns[5];
    for (int i = 0; i < 5; i++)
        ns[i] = measure();
    qsort(ns, 5, sizeof ns[0], by_value);
    printf("%.0f\n", ns[2]);
    return 0;
}
