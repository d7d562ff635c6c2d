#include <criterion/criterion.h>
Test(placeholder, none) {}
