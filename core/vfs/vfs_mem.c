/* vfs_mem.c */
