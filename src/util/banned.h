/* Functions we never call: unbounded copies, shell spawning, signal() with
 * its unclear semantics, atoi without error reporting (git's banned.h). */
#ifndef CODECELL_UTIL_BANNED_H
#define CODECELL_UTIL_BANNED_H

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef gets
#define gets(x) BANNED(gets)
#undef atoi
#define atoi(x) BANNED(atoi)
#undef atol
#define atol(x) BANNED(atol)
#undef system
#define system(x) BANNED(system)
#undef popen
#define popen(x, y) BANNED(popen)
#undef signal
#define signal(x, y) BANNED(signal)

#endif
