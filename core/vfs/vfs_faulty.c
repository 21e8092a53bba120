/* vfs_faulty.c */
