/* Functions that are not reentrant or not bounds-checked; using them is a
 * compile error. Included by every engine source through the build. */
#ifndef TFS_BANNED_H
#define TFS_BANNED_H

#define TFS_BANNED(func) sorry_##func##_is_banned

#undef strtok
#define strtok(...) TFS_BANNED(strtok)
#undef gmtime
#define gmtime(...) TFS_BANNED(gmtime)
#undef localtime
#define localtime(...) TFS_BANNED(localtime)
#undef strcpy
#define strcpy(...) TFS_BANNED(strcpy)
#undef strcat
#define strcat(...) TFS_BANNED(strcat)
#undef sprintf
#define sprintf(...) TFS_BANNED(sprintf)
#undef readdir_r
#define readdir_r(...) TFS_BANNED(readdir_r)

#endif
