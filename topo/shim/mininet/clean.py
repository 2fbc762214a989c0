"mininet.clean: hymn clean does this."


def cleanup():
    pass


class Cleanup(object):
    @classmethod
    def cleanup(cls):
        pass
