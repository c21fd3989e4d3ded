/* The floor under a C main (bench/floor/reader.c says what it does). */
int floor_serve(void);

int main(void)
{
    return floor_serve();
}
