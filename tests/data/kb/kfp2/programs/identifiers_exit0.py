"""A healthy run whose output holds the error words only inside identifiers, module paths and package names."""
import asyncio
import asyncio.timeouts
import sys


async def main():
    async with asyncio.timeout(5) as timeout_obj:
        await asyncio.sleep(0)
    print(f"deadline set: timeout_obj={timeout_obj!r}")


asyncio.run(main())
print("modules:", ", ".join(sorted(m for m in sys.modules if "timeout" in m or "exception" in m or "error" in m)))
print("error handling: retries enabled, report dir /home/user/run/errors/")
print("done")
