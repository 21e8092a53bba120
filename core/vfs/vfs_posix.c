/* vfs_posix.c */
