def build(:
    pass
