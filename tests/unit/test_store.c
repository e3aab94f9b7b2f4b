/* STUB: replaced by the store module work */
int main(void)
{
    return 0;
}
