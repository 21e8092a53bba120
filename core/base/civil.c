/* Calendar arithmetic (tfs_civil.h). */
#include "tfs_civil.h"

__extension__ typedef __int128 i128;

/* Counts in 400-year eras starting in March, so the leap day is the last
 * day of its year and the month lengths repeat from March on; 719468 is
 * the number of days from 0000-03-01 to 1970-01-01. */
i128 tfs_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	i128 yy = m <= 2 ? (i128)y - 1 : (i128)y;
	i128 era = (yy >= 0 ? yy : yy - 399) / 400;
	i128 yoe = yy - era * 400;
	i128 mp = m > 2 ? (i128)m - 3 : (i128)m + 9;
	i128 doy = (153 * mp + 2) / 5 + (i128)d - 1;
	i128 doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

	return era * 146097 + doe - 719468;
}
