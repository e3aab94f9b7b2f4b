/* STUB: replaced by the ingest module work */
int main(void)
{
    return 0;
}
