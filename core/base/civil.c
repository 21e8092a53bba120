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

void tfs_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era, day_of_era;
	unsigned doe, yoe, doy, mp;

	/* Days are counted from 0000-03-01, 719468 days before the epoch, in
	 * eras of 146097 days (400 years). The shift is applied to the era
	 * and the day within it, so that no day count overflows. */
	era = z / 146097;
	day_of_era = z % 146097;
	if (day_of_era < 0) {
		day_of_era += 146097;
		era--;
	}
	day_of_era += 719468 % 146097;
	era += 719468 / 146097;
	if (day_of_era >= 146097) {
		day_of_era -= 146097;
		era++;
	}
	doe = (unsigned)day_of_era;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}
