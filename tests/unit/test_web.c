/* STUB: replaced by the web module work */
int main(void)
{
    return 0;
}
