/* vfs_common.c */
